package script

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path"
	"path/filepath"
	"regexp"
	"sort"
	"strconv"
	"strings"
	"time"
	"unicode/utf8"

	v8 "rogchap.com/v8go"
)

// Timeout bounds, as in the reference engine.
const (
	// DefaultTimeout is a call's budget when the interface sets none.
	DefaultTimeout = 5 * time.Second
	// MinTimeout and MaxTimeout bound Interface.Timeout.
	MinTimeout = 10 * time.Millisecond
	MaxTimeout = 10 * time.Minute
	// MaxFileSize bounds one file of interface code or data.
	MaxFileSize = 8 << 20
)

// DefaultFunction is the function a call runs when it names none.
const DefaultFunction = "transform"

// File is one file of an interface's code (.js) or data (.json).
type File struct {
	// Name is the path inside the interface folder, with forward slashes
	// ("transform.js", "lib/codes.json").
	Name string
	// Source is the file's content, UTF-8.
	Source []byte
}

// Interface is an interface's code as the host loads it.
//
// The entry file (Main) runs as a classic script in the interface's own
// context, so its top-level functions are found by name. Every other .js
// file is a CommonJS module that runs on its first require("./file.js");
// .json files are data, parsed on require. require resolves only relative
// paths inside the folder; there is no import, no package, no filesystem.
type Interface struct {
	// Name is the interface's name (used in logs, file origins and errors).
	Name string
	// Files are the interface's .js and .json files.
	Files []File
	// Main is the entry file; empty means "transform.js", or the only .js
	// file.
	Main string
	// Timeout is a call's budget; zero means DefaultTimeout.
	Timeout time.Duration
	// Functions must be defined by the code (the destinations' transforms);
	// Load fails naming each one that is missing.
	Functions []string
}

// ReadInterfaceDir reads the .js and .json files under dir (dot-files and
// node_modules skipped) into an Interface named name.
func ReadInterfaceDir(name, dir string) (Interface, error) {
	spec := Interface{Name: name}
	err := filepath.WalkDir(dir, func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		base := d.Name()
		if p != dir && strings.HasPrefix(base, ".") || d.IsDir() && base == "node_modules" {
			if d.IsDir() {
				return filepath.SkipDir
			}
			return nil
		}
		if d.IsDir() || !(strings.HasSuffix(base, ".js") || strings.HasSuffix(base, ".json")) {
			return nil
		}
		rel, err := filepath.Rel(dir, p)
		if err != nil {
			return err
		}
		info, err := d.Info()
		if err != nil {
			return err
		}
		if info.Size() > MaxFileSize {
			return &LoadError{Interface: name, File: filepath.ToSlash(rel), Message: fmt.Sprintf("file is %d bytes; the limit is %d", info.Size(), MaxFileSize)}
		}
		src, err := os.ReadFile(p)
		if err != nil {
			return err
		}
		spec.Files = append(spec.Files, File{Name: filepath.ToSlash(rel), Source: src})
		return nil
	})
	if err != nil {
		return Interface{}, fmt.Errorf("script: reading interface %s from %s: %w", name, dir, err)
	}
	return spec, nil
}

var (
	namePattern     = regexp.MustCompile(`^[A-Za-z0-9][A-Za-z0-9_.-]{0,127}$`)
	functionPattern = regexp.MustCompile(`^[A-Za-z_$][A-Za-z0-9_$]*$`)
	requirePattern  = regexp.MustCompile(`\brequire\s*\(\s*(?:"([^"\n]*)"|'([^'\n]*)'|` + "`([^`\\n]*)`" + `)\s*\)`)
	importPattern   = regexp.MustCompile(`(?:^|[^.\w$])import\s*\(`)
)

// libraryPrefix wraps a module so its top level is a function scope; it
// stays on the first line so reported line numbers are the file's own.
const libraryPrefix = "(function (exports, require, module, __filename, __dirname) {"

// source is one file as the host compiles it.
type source struct {
	name   string // path inside the folder
	origin string // "<interface>/<name>", what V8 reports in stacks
	kind   string // "main", "js" or "json"
	text   string // as compiled (modules wrapped); json: the data
	cache  *v8.CompilerCachedData
}

// prepared is a validated interface: its sources, in the order they are
// bound (modules, then the entry file), and its settings.
type prepared struct {
	name      string
	mainFile  string
	sources   []source
	timeout   time.Duration
	functions []string
}

// prepare checks everything that can be checked without V8: names, paths,
// encodings, JSON data, and every literal require/import in the code.
func prepare(spec Interface) (*prepared, error) {
	bad := func(file string, line int, format string, args ...any) error {
		return &LoadError{Interface: spec.Name, File: file, Line: line, Message: fmt.Sprintf(format, args...)}
	}
	if !namePattern.MatchString(spec.Name) {
		return nil, fmt.Errorf("%w: interface name %q must be 1-128 letters, digits, '_', '.' or '-'", ErrBadInterface, spec.Name)
	}
	timeout := spec.Timeout
	if timeout == 0 {
		timeout = DefaultTimeout
	}
	if timeout < MinTimeout || timeout > MaxTimeout {
		return nil, bad("", 0, "timeout %s is outside %s..%s", spec.Timeout, MinTimeout, MaxTimeout)
	}
	names := map[string]bool{}
	var scripts []string
	for _, f := range spec.Files {
		clean := path.Clean(f.Name)
		if f.Name == "" || clean != f.Name || path.IsAbs(clean) || clean == ".." || strings.HasPrefix(clean, "../") || strings.Contains(f.Name, "\\") {
			return nil, bad(f.Name, 0, "file name must be a clean relative path with forward slashes")
		}
		if names[f.Name] {
			return nil, bad(f.Name, 0, "file is listed twice")
		}
		names[f.Name] = true
		if !strings.HasSuffix(f.Name, ".js") && !strings.HasSuffix(f.Name, ".json") {
			return nil, bad(f.Name, 0, "only .js and .json files belong to an interface's code")
		}
		if len(f.Source) > MaxFileSize {
			return nil, bad(f.Name, 0, "file is %d bytes; the limit is %d", len(f.Source), MaxFileSize)
		}
		if !utf8.Valid(f.Source) {
			return nil, bad(f.Name, lineAt(f.Source, invalidUTF8At(f.Source)), "file is not valid UTF-8")
		}
		if strings.HasSuffix(f.Name, ".js") {
			scripts = append(scripts, f.Name)
		}
	}
	main := spec.Main
	switch {
	case main != "":
		if !names[main] || !strings.HasSuffix(main, ".js") {
			return nil, bad(main, 0, "the entry file is not among the interface's .js files %v", scripts)
		}
	case names["transform.js"]:
		main = "transform.js"
	case len(scripts) == 1:
		main = scripts[0]
	case len(scripts) == 0:
		return nil, bad("", 0, "the interface has no .js file")
	default:
		return nil, bad("", 0, "the interface has several .js files %v and no transform.js: name the entry file", scripts)
	}
	for _, fn := range spec.Functions {
		if !functionPattern.MatchString(fn) {
			return nil, bad(main, 0, "function name %q is not a JavaScript identifier", fn)
		}
	}

	p := &prepared{name: spec.Name, mainFile: main, timeout: timeout, functions: append([]string(nil), spec.Functions...)}
	var entry source
	files := append([]File(nil), spec.Files...)
	sort.Slice(files, func(i, j int) bool { return files[i].Name < files[j].Name })
	for _, f := range files {
		s := source{name: f.Name, origin: spec.Name + "/" + f.Name}
		if strings.HasSuffix(f.Name, ".json") {
			if err := json.Unmarshal(f.Source, new(any)); err != nil {
				line := 0
				var se *json.SyntaxError
				if errors.As(err, &se) {
					line = lineAt(f.Source, int(se.Offset))
				}
				return nil, bad(f.Name, line, "not valid JSON: %v", err)
			}
			s.kind, s.text = "json", string(f.Source)
			p.sources = append(p.sources, s)
			continue
		}
		if err := scanRequires(spec.Name, f.Name, f.Source, names); err != nil {
			return nil, err
		}
		if f.Name == main {
			s.kind, s.text = "main", string(f.Source)
			entry = s
			continue
		}
		s.kind, s.text = "js", libraryPrefix+string(f.Source)+"\n})"
		p.sources = append(p.sources, s)
	}
	p.sources = append(p.sources, entry)
	return p, nil
}

// scanRequires refuses, at load, every literal require that cannot resolve
// inside the folder and every dynamic import(); the SDK's require enforces
// the same rule at run time for computed paths.
func scanRequires(iface, file string, src []byte, names map[string]bool) error {
	code := blankComments(src)
	if loc := importPattern.FindIndex(code); loc != nil {
		return &LoadError{Interface: iface, File: file, Line: lineAt(src, loc[0]), Message: `import() is not available; an interface shares code with require("./file.js")`}
	}
	for _, m := range requirePattern.FindAllSubmatchIndex(code, -1) {
		var spec string
		for g := 2; g < len(m); g += 2 {
			if m[g] >= 0 {
				spec = string(src[m[g]:m[g+1]])
			}
		}
		line := lineAt(src, m[0])
		if !strings.HasPrefix(spec, "./") && !strings.HasPrefix(spec, "../") {
			return &LoadError{Interface: iface, File: file, Line: line, Message: fmt.Sprintf(`require(%q): only the interface's own files can be required, by a relative path such as "./lib.js" (there are no packages, filesystem or network)`, spec)}
		}
		target := path.Join(path.Dir(file), spec)
		if target == ".." || strings.HasPrefix(target, "../") {
			return &LoadError{Interface: iface, File: file, Line: line, Message: fmt.Sprintf("require(%q): the path leaves the interface folder", spec)}
		}
		if !names[target] && !names[target+".js"] && !names[target+".json"] {
			return &LoadError{Interface: iface, File: file, Line: line, Message: fmt.Sprintf("require(%q): the interface has no file %s", spec, target)}
		}
	}
	return nil
}

// blankComments returns src with // and /* */ comments replaced by spaces
// (newlines kept), so the scan ignores commented-out code. It knows string
// literals well enough not to take "//" inside one for a comment.
func blankComments(src []byte) []byte {
	out := bytes.Clone(src)
	var quote byte
	for i := 0; i < len(out); i++ {
		c := out[i]
		switch {
		case quote != 0:
			if c == '\\' {
				i++
			} else if c == quote || c == '\n' && quote != '`' {
				quote = 0
			}
		case c == '"' || c == '\'' || c == '`':
			quote = c
		case c == '/' && i+1 < len(out) && out[i+1] == '/':
			for ; i < len(out) && out[i] != '\n'; i++ {
				out[i] = ' '
			}
		case c == '/' && i+1 < len(out) && out[i+1] == '*':
			stop := len(out)
			if end := bytes.Index(out[i+2:], []byte("*/")); end >= 0 {
				stop = i + 2 + end + 2
			}
			for k := i; k < stop; k++ {
				if out[k] != '\n' {
					out[k] = ' '
				}
			}
			i = stop - 1
		}
	}
	return out
}

func lineAt(src []byte, offset int) int {
	if offset < 0 {
		return 0
	}
	if offset > len(src) {
		offset = len(src)
	}
	return bytes.Count(src[:offset], []byte("\n")) + 1
}

func invalidUTF8At(src []byte) int {
	for i := 0; i < len(src); {
		r, n := utf8.DecodeRune(src[i:])
		if r == utf8.RuneError && n <= 1 {
			return i
		}
		i += n
	}
	return -1
}

// loadErrorFrom turns a V8 error met while binding an interface into a
// LoadError with the file and line V8 reported.
func loadErrorFrom(iface string, err error, hint string) *LoadError {
	le := &LoadError{Interface: iface, Message: err.Error()}
	var js *v8.JSError
	if errors.As(err, &js) {
		le.Message = js.Message
		file, line, col := splitLocation(js.Location)
		if prefix := iface + "/"; strings.HasPrefix(file, prefix) {
			le.File, le.Line, le.Column = strings.TrimPrefix(file, prefix), line, col
		}
		if le.File == "" {
			// a throw from the SDK (a require that failed at run time):
			// the first frame of the interface's own code says where
			le.File, le.Line, le.Column = firstOwnFrame(iface, js.StackTrace)
		}
		if strings.Contains(js.Message, "Cannot use import statement") {
			le.Message += `; an interface shares code with require("./file.js")`
		}
	}
	if hint != "" {
		le.Message = hint + ": " + le.Message
	}
	return le
}

// splitLocation parses V8's "origin:line:column".
func splitLocation(loc string) (string, int, int) {
	parts := strings.Split(loc, ":")
	if len(parts) < 3 {
		return loc, 0, 0
	}
	line, err1 := strconv.Atoi(parts[len(parts)-2])
	col, err2 := strconv.Atoi(parts[len(parts)-1])
	if err1 != nil || err2 != nil {
		return loc, 0, 0
	}
	return strings.Join(parts[:len(parts)-2], ":"), line, col
}

var framePattern = regexp.MustCompile(`\(?([^\s()]+):(\d+):(\d+)\)?$`)

func firstOwnFrame(iface, stack string) (string, int, int) {
	for _, l := range strings.Split(stack, "\n") {
		m := framePattern.FindStringSubmatch(strings.TrimSpace(l))
		if m == nil || !strings.HasPrefix(m[1], iface+"/") {
			continue
		}
		line, _ := strconv.Atoi(m[2])
		col, _ := strconv.Atoi(m[3])
		return strings.TrimPrefix(m[1], iface+"/"), line, col
	}
	return "", 0, 0
}
