package config

import (
	"fmt"
	"os"
	"path"
	"path/filepath"
	"regexp"
	"sort"
	"strings"
	"time"

	"gopkg.in/yaml.v3"
)

// DefaultDedupeWindow is how long a dedupe key is remembered by default.
const DefaultDedupeWindow = 24 * time.Hour

// ifaceInfo is an interface with what the cross-checks need.
type ifaceInfo struct {
	in    *Interface
	d     *doc
	src   sourceInfo
	dests []*destInfo
}

// readInterface reads interfaces/<name>/interface.yaml.
func readInterface(d *doc, root *yaml.Node, name, dir, projectDir string, eng Engine, conns map[string]*Connection, haveResources bool) *ifaceInfo {
	o := d.object("", 0, root)
	in := &Interface{Name: name, Dir: dir, File: d.file}
	info := &ifaceInfo{in: in, d: d}
	in.Description = o.str("description", "")

	src := o.child("source")
	if !o.has("source") {
		o.missing("source")
	} else {
		in.Source, info.src = readSource(src, projectDir)
	}
	in.Format = readFormat(o, in.Source.Type)
	in.Charset = readInterfaceCharset(o, in.Source.Type)

	if t, ok := o.scalar("ordering_key"); ok && t.value != "" {
		k, msg := parseKey(t.value, in.Format)
		if msg != "" {
			o.problem("ordering_key", "%s", msg)
		} else {
			in.OrderingKey = &k
		}
	}
	if o.has("partitions") && !o.has("ordering_key") {
		o.known["partitions"] = true
		o.problem("partitions", "partitions needs an ordering_key: without one the interface has a single lane")
	}
	in.Partitions = 1
	if in.OrderingKey != nil || o.has("ordering_key") {
		in.Partitions = o.integer("partitions", eng.Partitions, 1, MaxPartitions)
	}
	if o.has("dedupe") {
		dd := o.child("dedupe")
		in.Dedupe = &Dedupe{Window: dd.duration("window", DefaultDedupeWindow, time.Second)}
		if key, ok := dd.reqStr("key"); ok {
			k, msg := parseKey(key, in.Format)
			if msg != "" {
				dd.problem("key", "%s", msg)
			}
			in.Dedupe.Key = k
		}
		dd.finish(nil)
	} else {
		o.known["dedupe"] = true
	}
	in.Timeout = o.duration("timeout", eng.Script.Timeout, time.Millisecond)

	scriptsOK := readScripts(o, in)

	list, present := o.entries("destinations")
	if !present {
		o.missing("destinations")
	} else if len(list) == 0 {
		o.problem("destinations", "want at least one destination")
	}
	for _, n := range list {
		if msg := checkName(n.name); msg != "" {
			d.problemAt(n.key, n.field, "%s", msg)
			continue
		}
		di := readDestination(d.object(n.field, n.key.Line, n.val), n.name, in, conns, projectDir, haveResources)
		if di != nil {
			info.dests = append(info.dests, di)
			in.Destinations = append(in.Destinations, di.dest)
		}
	}
	sort.Slice(in.Destinations, func(i, j int) bool { return in.Destinations[i].Name < in.Destinations[j].Name })
	o.finish(nil)

	if scriptsOK {
		checkTransforms(d, in, info.dests, o.keyLine("destinations"))
	}
	return info
}

// readFormat reads format:, which some sources fix or default.
func readFormat(o *obj, st SourceType) Format {
	var fixed Format
	why := ""
	switch st {
	case SourceMLLP:
		fixed, why = FormatHL7v2, "an mllp source reads HL7 v2"
	case SourceSchedule:
		fixed, why = FormatJSON, `a schedule source produces JSON ({"due","previous"})`
	}
	if !o.has("format") {
		o.known["format"] = true
		if fixed == "" && st != "" {
			o.missing("format")
		}
		return fixed
	}
	f := Format(o.enum("format", "", formatNames...))
	if fixed != "" && f != "" && f != fixed {
		o.problem("format", "%s: want format %s, got %q", why, fixed, f)
		return fixed
	}
	return f
}

// readScripts resolves scripts: (or every *.js in the folder). It returns
// false when a script could not be found, so that the transform check does
// not pile more problems on top.
func readScripts(o *obj, in *Interface) bool {
	items, present := o.list("scripts")
	if !present {
		matches, _ := filepath.Glob(filepath.Join(in.Dir, "*.js"))
		sort.Strings(matches)
		for _, m := range matches {
			if st, err := os.Stat(m); err == nil && st.Mode().IsRegular() {
				in.Scripts = append(in.Scripts, Script{Name: filepath.Base(m), Path: m})
			}
		}
		return true
	}
	ok := true
	seen := map[string]int{}
	for i, it := range items {
		field := fmt.Sprintf("scripts[%d]", i)
		t, good := o.d.text(it, field)
		if !good {
			ok = false
			continue
		}
		name := strings.TrimPrefix(filepath.ToSlash(t.value), "./")
		if name == "" || path.IsAbs(name) || path.Clean(name) != name || strings.HasPrefix(name, "../") || name == ".." {
			o.d.problemAt(it, field, "want a file in the interface's folder, such as transform.js, got %q", t.value)
			ok = false
			continue
		}
		if prev, dup := seen[name]; dup {
			o.d.problemAt(it, field, "%s is listed twice (first as scripts[%d])", name, prev)
			continue
		}
		seen[name] = i
		p := filepath.Join(in.Dir, filepath.FromSlash(name))
		st, err := os.Stat(p)
		switch {
		case err != nil:
			o.d.problemAt(it, field, "script %s does not exist in %s", name, path.Dir(in.File))
			ok = false
			continue
		case !st.Mode().IsRegular():
			o.d.problemAt(it, field, "%s is not a file", name)
			ok = false
			continue
		}
		in.Scripts = append(in.Scripts, Script{Name: name, Path: p})
	}
	return ok
}

// checkTransforms looks for each destination's function name in the
// interface's scripts. Without running V8 this cannot prove the function
// exists, but a name that appears in no script at all is certainly a typo or
// a missing file; the script host checks for real when the engine starts.
func checkTransforms(d *doc, in *Interface, dests []*destInfo, destLine int) {
	if len(dests) == 0 {
		return
	}
	if len(in.Scripts) == 0 {
		d.probs.addf(d.file, destLine, 0, "scripts", "no scripts: put the transform function in %s/transform.js, or list files in scripts:", path.Dir(in.File))
		return
	}
	var all strings.Builder
	var names []string
	for _, s := range in.Scripts {
		b, err := os.ReadFile(s.Path)
		if err != nil {
			d.probs.addf(d.file, 0, 0, "scripts", "cannot read %s: %v", s.Name, err)
			return
		}
		all.Write(b)
		all.WriteByte('\n')
		names = append(names, s.Name)
	}
	src := all.String()
	for _, di := range dests {
		fn := di.dest.Transform
		if !jsIdentifier.MatchString(fn) {
			continue // reported already
		}
		re := regexp.MustCompile(`(^|[^A-Za-z0-9_$])` + regexp.QuoteMeta(fn) + `([^A-Za-z0-9_$]|$)`)
		if !re.MatchString(src) {
			d.probs.addf(d.file, di.transformLine, 0, "destinations."+di.dest.Name+".transform",
				"no function %s in %s", fn, strings.Join(names, ", "))
		}
	}
}
