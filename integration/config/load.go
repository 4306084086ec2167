package config

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"runtime"
	"sort"
	"strings"

	"golang.org/x/sync/errgroup"
	"gopkg.in/yaml.v3"
)

// File names of a project.
const (
	engineFile    = "ductus.yaml"
	resourcesFile = "resources.yaml"
	interfacesDir = "interfaces"
	interfaceFile = "interface.yaml"
)

// LoadOptions are the caller's inputs to Load besides the folder.
type LoadOptions struct {
	// LookupEnv resolves ${env:NAME}; nil means os.LookupEnv.
	LookupEnv func(name string) (string, bool)
}

// Load reads and checks the project in dir without touching a database or
// the network. When anything is wrong it returns a *ValidationError listing
// every problem found; other errors (the folder cannot be read at all) are
// returned as they are, wrapped.
func Load(dir string, opts LoadOptions) (*Project, error) {
	abs, err := filepath.Abs(dir)
	if err != nil {
		return nil, fmt.Errorf("config: project folder %s: %w", dir, err)
	}
	st, err := os.Stat(abs)
	if err != nil {
		return nil, fmt.Errorf("config: project folder: %w", err)
	}
	if !st.IsDir() {
		return nil, fmt.Errorf("config: project folder %s: not a folder", dir)
	}
	l := &loader{
		dir:   abs,
		probs: &problems{},
		sub:   &substituter{lookupEnv: opts.LookupEnv},
	}
	if l.sub.lookupEnv == nil {
		l.sub.lookupEnv = os.LookupEnv
	}
	p := l.load()
	if len(l.probs.list) > 0 {
		return nil, &ValidationError{Problems: l.probs.sorted()}
	}
	return p, nil
}

type loader struct {
	dir   string
	probs *problems
	sub   *substituter
}

func (l *loader) load() *Project {
	p := &Project{Dir: l.dir, Secrets: map[string]string{}, Resources: Resources{Connections: map[string]*Connection{}}}
	var listeners []listener

	// ductus.yaml: the secrets file first, since every other value may
	// refer to it.
	ed := &doc{file: engineFile, probs: l.probs, sub: l.sub}
	root, ok := l.readYAML(ed, true)
	eo := ed.object("", 0, root)
	if !ok {
		eo.broken = true
	}
	l.sub.noSecrets = true
	secretsPath := eo.str("secrets", "")
	l.sub.noSecrets = false
	if secretsPath != "" {
		l.sub.secretsFile = secretsPath
		p.Engine.SecretsFile = resolvePath(l.dir, secretsPath)
		p.Secrets = l.readSecrets(eo, p.Engine.SecretsFile)
		l.sub.secrets = p.Secrets
	}
	eng, apiLine := readEngine(eo, l.dir)
	eng.SecretsFile = p.Engine.SecretsFile
	p.Engine = eng
	eo.finish(nil)
	if eng.API.Listen != "" {
		addr, _ := parseListen(eng.API.Listen)
		listeners = append(listeners, listener{addr: addr, text: eng.API.Listen, file: engineFile, line: apiLine, field: "api.listen"})
		if !addr.loopback() {
			p.Warnings = append(p.Warnings, Problem{File: engineFile, Line: apiLine, Field: "api.listen",
				Message: fmt.Sprintf("the API listens on %s, beyond this machine, without TLS", eng.API.Listen)})
		}
	}

	// resources.yaml, optional.
	rd := &doc{file: resourcesFile, probs: l.probs, sub: l.sub}
	haveResources := false
	if rroot, ok := l.readYAML(rd, false); ok {
		_, err := os.Stat(filepath.Join(l.dir, resourcesFile))
		haveResources = err == nil
		p.Resources = readResources(rd.object("", 0, rroot), l.dir)
	} else {
		haveResources = true // it exists but is broken: do not also say it is missing
	}

	// interfaces/<name>/interface.yaml.
	infos := l.readInterfaces(p.Engine, p.Resources.Connections, haveResources)
	for _, ii := range infos {
		p.Interfaces = append(p.Interfaces, ii.in)
		if ii.src.hasListen {
			listeners = append(listeners, listener{addr: ii.src.listen, text: listenText(ii.in), file: ii.d.file, line: ii.src.listenLine, field: "source.listen"})
		}
		for _, di := range ii.dests {
			if di.warning != "" {
				p.Warnings = append(p.Warnings, Problem{File: ii.d.file, Line: di.warningLine, Field: "destinations." + di.dest.Name + ".name", Message: di.warning})
			}
		}
	}
	checkRoutes(infos, l.probs)
	checkListeners(listeners, l.probs)
	checkFolders(infos, l.probs)
	p.Warnings = append(p.Warnings, routeWarnings(infos)...)
	p.Warnings = (&problems{list: p.Warnings}).sorted()
	return p
}

func listenText(in *Interface) string {
	switch {
	case in.Source.MLLP != nil:
		return in.Source.MLLP.Listen
	case in.Source.HTTP != nil:
		return in.Source.HTTP.Listen
	}
	return ""
}

// readYAML reads and parses one of the project's YAML files. ok is false
// when the file is missing (and required) or broken.
func (l *loader) readYAML(d *doc, required bool) (root *yaml.Node, ok bool) {
	data, err := os.ReadFile(filepath.Join(l.dir, filepath.FromSlash(d.file)))
	if err != nil {
		if errors.Is(err, fs.ErrNotExist) {
			if !required {
				return nil, true
			}
			msg := "missing: a project folder needs a ductus.yaml (it may be empty)"
			if d.file != engineFile {
				msg = "missing"
			}
			if alt := strings.TrimSuffix(d.file, ".yaml") + ".yml"; fileExists(filepath.Join(l.dir, alt)) {
				msg = fmt.Sprintf("missing (found %s: rename it to %s)", alt, filepath.Base(d.file))
			}
			l.probs.addf(d.file, 0, 0, "", "%s", msg)
			return nil, false
		}
		l.probs.addf(d.file, 0, 0, "", "cannot read: %v", err)
		return nil, false
	}
	return d.parse(data)
}

func fileExists(p string) bool {
	st, err := os.Stat(p)
	return err == nil && st.Mode().IsRegular()
}

// readInterfaces reads every folder under interfaces/, sorted by name.
func (l *loader) readInterfaces(eng Engine, conns map[string]*Connection, haveResources bool) []*ifaceInfo {
	entries, err := os.ReadDir(filepath.Join(l.dir, interfacesDir))
	if err != nil {
		if !errors.Is(err, fs.ErrNotExist) {
			l.probs.addf(interfacesDir, 0, 0, "", "cannot read: %v", err)
		}
		return nil
	}
	// Each interface is read on its own (its files, its YAML) with its own
	// problem list, several at a time: a site of a thousand interfaces is
	// a few thousand small files, and reading them is mostly system calls.
	// Problems are sorted at the end, so the order they are found in does
	// not matter.
	type result struct {
		info  *ifaceInfo
		probs problems
	}
	results := make([]result, len(entries))
	var g errgroup.Group
	g.SetLimit(runtime.GOMAXPROCS(0))
	for i, e := range entries {
		g.Go(func() error {
			results[i].info = l.readInterfaceDir(e.Name(), &results[i].probs, eng, conns, haveResources)
			return nil
		})
	}
	_ = g.Wait()
	var infos []*ifaceInfo
	for _, r := range results {
		l.probs.list = append(l.probs.list, r.probs.list...)
		if r.info != nil {
			infos = append(infos, r.info)
		}
	}
	sort.Slice(infos, func(i, j int) bool { return infos[i].in.Name < infos[j].in.Name })
	return infos
}

// readInterfaceDir reads the interface in interfaces/name, adding what is
// wrong with it to probs; nil when the folder is not an interface or its
// interface.yaml cannot be read or parsed.
func (l *loader) readInterfaceDir(name string, probs *problems, eng Engine, conns map[string]*Connection, haveResources bool) *ifaceInfo {
	dir := filepath.Join(l.dir, interfacesDir, name)
	if strings.HasPrefix(name, ".") {
		return nil
	}
	// Follow symbolic links: an interface may be linked in from elsewhere.
	if st, err := os.Stat(dir); err != nil || !st.IsDir() {
		return nil // README files and the like
	}
	rel := interfacesDir + "/" + name
	if msg := checkName(name); msg != "" {
		probs.addf(rel, 0, 0, "", "interface folder %s", msg)
		return nil
	}
	d := &doc{file: rel + "/" + interfaceFile, probs: probs, sub: l.sub}
	data, err := os.ReadFile(filepath.Join(dir, interfaceFile))
	if err != nil {
		msg := "no interface.yaml in this folder (every folder under interfaces/ is an interface)"
		if fileExists(filepath.Join(dir, "interface.yml")) {
			msg = "no interface.yaml in this folder (found interface.yml: rename it to interface.yaml)"
		} else if !errors.Is(err, fs.ErrNotExist) {
			msg = fmt.Sprintf("cannot read interface.yaml: %v", err)
		}
		probs.addf(rel, 0, 0, "", "%s", msg)
		return nil
	}
	root, ok := d.parse(data)
	if !ok {
		return nil
	}
	return readInterface(d, root, name, dir, l.dir, eng, conns, haveResources)
}

// readSecrets loads the secrets file: a JSON object of names to strings.
// Values are never echoed in problems.
func (l *loader) readSecrets(eo *obj, path string) map[string]string {
	out := map[string]string{}
	ifDir := filepath.Join(l.dir, interfacesDir)
	if inside(ifDir, path) {
		eo.problem("secrets", "the secrets file must be outside interfaces/ (interface code is shared; secrets are not)")
		return out
	}
	rel, err := filepath.Rel(l.dir, path)
	if err != nil {
		rel = path
	}
	file := filepath.ToSlash(rel)
	data, err := os.ReadFile(path)
	if err != nil {
		if errors.Is(err, fs.ErrNotExist) {
			eo.problem("secrets", "secrets file %s does not exist", file)
		} else {
			eo.problem("secrets", "cannot read the secrets file: %v", err)
		}
		return out
	}
	if real, err := filepath.EvalSymlinks(path); err == nil && inside(ifDir, real) {
		eo.problem("secrets", "the secrets file must be outside interfaces/ (it links to %s)", real)
		return out
	}
	parseSecrets(data, file, l.probs, out)
	return out
}

// inside reports whether p is dir or below it.
func inside(dir, p string) bool {
	if real, err := filepath.EvalSymlinks(dir); err == nil {
		if rp, err := filepath.EvalSymlinks(filepath.Dir(p)); err == nil {
			if r, err := filepath.Rel(real, filepath.Join(rp, filepath.Base(p))); err == nil && !strings.HasPrefix(r, "..") {
				return true
			}
		}
	}
	r, err := filepath.Rel(dir, p)
	return err == nil && r != ".." && !strings.HasPrefix(r, ".."+string(filepath.Separator))
}

// parseSecrets reads a JSON object token by token, so that a problem can
// name its line.
func parseSecrets(data []byte, file string, probs *problems, out map[string]string) {
	lineAt := func(off int64) int {
		off = min(max(off, 0), int64(len(data)))
		return bytes.Count(data[:off], []byte("\n")) + 1
	}
	// nextLine is the line of the next token after off.
	nextLine := func(off int64) int {
		for off < int64(len(data)) && strings.IndexByte(" \t\r\n:,", data[off]) >= 0 {
			off++
		}
		return lineAt(off)
	}
	dec := json.NewDecoder(bytes.NewReader(data))
	syntax := func(err error) {
		line := lineAt(dec.InputOffset())
		var se *json.SyntaxError
		if errors.As(err, &se) {
			line = lineAt(se.Offset)
		}
		if errors.Is(err, io.EOF) || errors.Is(err, io.ErrUnexpectedEOF) {
			err = errors.New("unexpected end of file")
		}
		probs.addf(file, line, 0, "", "JSON syntax error: %v", err)
	}
	tok, err := dec.Token()
	if err != nil {
		syntax(err)
		return
	}
	if tok != json.Delim('{') {
		probs.addf(file, 1, 0, "", `want a JSON object of names to strings, such as {"DB_PASSWORD": "..."}`)
		return
	}
	lines := map[string]int{}
	for dec.More() {
		tok, err := dec.Token()
		if err != nil {
			syntax(err)
			return
		}
		name, _ := tok.(string)
		keyLine := lineAt(dec.InputOffset())
		valLine := nextLine(dec.InputOffset())
		var raw json.RawMessage
		if err := dec.Decode(&raw); err != nil {
			syntax(err)
			return
		}
		var s string
		if err := json.Unmarshal(raw, &s); err != nil {
			probs.addf(file, valLine, 0, name, "want a string value (quote it)")
			continue
		}
		if prev, dup := lines[name]; dup {
			probs.addf(file, keyLine, 0, name, "duplicate name (first at line %d)", prev)
			continue
		}
		if !substName.MatchString(name) {
			probs.addf(file, keyLine, 0, name, "a secret's name must match [A-Za-z_][A-Za-z0-9_.-]* to be used as ${secret:NAME}")
			continue
		}
		lines[name] = keyLine
		out[name] = s
	}
	if _, err := dec.Token(); err != nil {
		syntax(err)
		return
	}
	if _, err := dec.Token(); !errors.Is(err, io.EOF) {
		probs.addf(file, lineAt(dec.InputOffset()), 0, "", "JSON syntax error: more after the closing }")
	}
}
