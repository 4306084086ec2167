package config

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"regexp"
	"sort"
	"strconv"
	"strings"

	"gopkg.in/yaml.v3"
)

// This file reads YAML as yaml.Node trees rather than into structs: a node
// knows its line, so every problem can point at the value that caused it,
// and reading key by key lets a load report every problem in one pass instead
// of stopping at the first one as yaml.Unmarshal would.

// doc is one YAML file being read.
type doc struct {
	file  string // relative, slash-separated, for problems
	probs *problems
	sub   *substituter
}

var yamlLineErr = regexp.MustCompile(`^yaml: line (\d+): (.*)$`)

// parse reads data as a single YAML document and returns its root, which is
// nil for an empty file. ok is false when the file is not valid YAML or its
// top level is not a mapping; the problem has then been reported.
func (d *doc) parse(data []byte) (root *yaml.Node, ok bool) {
	dec := yaml.NewDecoder(bytes.NewReader(data))
	var n yaml.Node
	if err := dec.Decode(&n); err != nil {
		if errors.Is(err, io.EOF) {
			return nil, true
		}
		d.syntax(err, data)
		return nil, false
	}
	var extra yaml.Node
	if err := dec.Decode(&extra); err == nil {
		d.probs.addf(d.file, extra.Line, extra.Column, "", "a second YAML document (---) is not allowed: put everything in one document")
		return nil, false
	} else if !errors.Is(err, io.EOF) {
		d.syntax(err, data)
		return nil, false
	}
	root = &n
	if root.Kind == yaml.DocumentNode {
		if len(root.Content) == 0 {
			return nil, true
		}
		root = root.Content[0]
	}
	root = deref(root)
	if root.Kind == yaml.ScalarNode && root.ShortTag() == "!!null" {
		return nil, true
	}
	if root.Kind != yaml.MappingNode {
		d.probs.addf(d.file, root.Line, root.Column, "", "want a mapping of keys at the top level, got %s", kindName(root))
		return nil, false
	}
	return root, true
}

// syntax reports a YAML syntax error. yaml.v3 names the line where the
// enclosing construct began (a mapping opened two lines up, say), not the
// line that broke it; so the file is parsed again line by line from there
// until the same error appears, and that line is reported.
func (d *doc) syntax(err error, data []byte) {
	line, msg := splitYAMLError(err)
	if l := problemLine(data, msg, line); l > 0 {
		line = l
	}
	if strings.Contains(msg, "end of stream") {
		msg += " (is a quote or bracket left open above?)"
	}
	d.probs.addf(d.file, line, 0, "", "YAML syntax error: %s", msg)
}

func splitYAMLError(err error) (int, string) {
	msg := err.Error()
	if m := yamlLineErr.FindStringSubmatch(msg); m != nil {
		line, _ := strconv.Atoi(m[1])
		return line, m[2]
	}
	return 0, strings.TrimPrefix(msg, "yaml: ")
}

// problemLine is the first line n (from start on) such that the file's
// first n lines fail with msg; 0 when there is none.
func problemLine(data []byte, msg string, start int) int {
	lines := bytes.SplitAfter(data, []byte("\n"))
	if len(lines) > 5000 {
		return 0 // not worth the quadratic cost; keep the parser's line
	}
	for n := max(start, 1); n <= len(lines); n++ {
		dec := yaml.NewDecoder(bytes.NewReader(bytes.Join(lines[:n], nil)))
		for {
			var node yaml.Node
			err := dec.Decode(&node)
			if err == nil {
				continue
			}
			if !errors.Is(err, io.EOF) {
				if _, m := splitYAMLError(err); m == msg {
					return n
				}
			}
			break
		}
	}
	return 0
}

// deref follows aliases (*name) to the node they stand for.
func deref(n *yaml.Node) *yaml.Node {
	for n != nil && n.Kind == yaml.AliasNode {
		n = n.Alias
	}
	return n
}

func kindName(n *yaml.Node) string {
	switch n.Kind {
	case yaml.MappingNode:
		return "a mapping"
	case yaml.SequenceNode:
		return "a list"
	case yaml.ScalarNode:
		switch n.ShortTag() {
		case "!!null":
			return "nothing"
		case "!!int", "!!float":
			return "the number " + n.Value
		case "!!bool":
			return "the boolean " + n.Value
		}
		return strconv.Quote(n.Value)
	}
	return "an unexpected YAML node"
}

// entry is one key of a mapping with its value.
type entry struct {
	key, val *yaml.Node
}

// obj reads one YAML mapping key by key. Every key read is remembered as
// known; finish reports the keys nobody asked for.
type obj struct {
	d     *doc
	path  string // dotted path of this mapping, "" at the top level
	line  int    // where a missing key is reported: the line of this mapping's own key
	m     map[string]entry
	order []string
	known map[string]bool
	// broken is set when the value was not a mapping (already reported): its
	// keys are then neither missing nor unknown.
	broken bool
}

// object wraps a mapping node; n may be nil for an absent mapping.
func (d *doc) object(path string, line int, n *yaml.Node) *obj {
	o := &obj{d: d, path: path, line: line, m: map[string]entry{}, known: map[string]bool{}}
	n = deref(n)
	if n == nil || (n.Kind == yaml.ScalarNode && n.ShortTag() == "!!null") {
		return o
	}
	if n.Kind != yaml.MappingNode {
		d.probs.addf(d.file, n.Line, n.Column, path, "want a mapping of keys, got %s", kindName(n))
		o.broken = true
		return o
	}
	o.collect(n, false)
	return o
}

// collect adds n's keys. Keys merged in with "<<" never override keys written
// in the mapping itself, as in YAML's merge key convention.
func (o *obj) collect(n *yaml.Node, merged bool) {
	var merges []*yaml.Node
	for i := 0; i+1 < len(n.Content); i += 2 {
		k, v := deref(n.Content[i]), n.Content[i+1]
		if k.Kind != yaml.ScalarNode {
			o.d.probs.addf(o.d.file, k.Line, k.Column, o.path, "want a plain key, got %s", kindName(k))
			continue
		}
		if k.Value == "<<" && k.ShortTag() == "!!merge" {
			merges = append(merges, deref(v))
			continue
		}
		if prev, dup := o.m[k.Value]; dup {
			if !merged {
				o.d.probs.addf(o.d.file, k.Line, k.Column, o.field(k.Value), "duplicate key (first at line %d)", prev.key.Line)
			}
			continue
		}
		o.m[k.Value] = entry{key: k, val: v}
		o.order = append(o.order, k.Value)
	}
	for _, mv := range merges {
		switch mv.Kind {
		case yaml.MappingNode:
			o.collect(mv, true)
		case yaml.SequenceNode:
			for _, it := range mv.Content {
				if it = deref(it); it.Kind == yaml.MappingNode {
					o.collect(it, true)
				}
			}
		default:
			o.d.probs.addf(o.d.file, mv.Line, mv.Column, o.path, "a merge (<<) wants a mapping, got %s", kindName(mv))
		}
	}
}

// field is the dotted path of key in this mapping.
func (o *obj) field(key string) string {
	if o.path == "" {
		return key
	}
	return o.path + "." + key
}

// get returns key's entry; present is false when the key is absent or its
// value is null, which both mean "use the default".
func (o *obj) get(key string) (e entry, present bool) {
	o.known[key] = true
	e, ok := o.m[key]
	if !ok {
		return e, false
	}
	v := deref(e.val)
	if v.Kind == yaml.ScalarNode && v.ShortTag() == "!!null" {
		return e, false
	}
	return entry{key: e.key, val: v}, true
}

// has reports whether key has a value, without marking it known.
func (o *obj) has(key string) bool {
	e, ok := o.m[key]
	if !ok {
		return false
	}
	v := deref(e.val)
	return !(v.Kind == yaml.ScalarNode && v.ShortTag() == "!!null")
}

// keyLine is the line of key if present, else the mapping's line.
func (o *obj) keyLine(key string) int {
	if e, ok := o.m[key]; ok {
		return e.key.Line
	}
	return o.line
}

// problem reports a problem with key's value.
func (o *obj) problem(key string, format string, args ...any) {
	line, col := o.line, 0
	if e, ok := o.m[key]; ok {
		v := deref(e.val)
		line, col = v.Line, v.Column
	}
	o.d.probs.addf(o.d.file, line, col, o.field(key), format, args...)
}

// problemAt reports a problem at a node, under a field path.
func (d *doc) problemAt(n *yaml.Node, field, format string, args ...any) {
	line, col := 0, 0
	if n != nil {
		line, col = n.Line, n.Column
	}
	d.probs.addf(d.file, line, col, field, format, args...)
}

// missing reports that a required key is absent.
func (o *obj) missing(key string) {
	if o.broken {
		return
	}
	if _, ok := o.m[key]; ok {
		o.problem(key, "needs a value")
		return
	}
	o.d.probs.addf(o.d.file, o.line, 0, o.field(key), "missing required key")
}

// scalarText is a scalar's text after substitution, and how to show it in a
// message without revealing a secret.
type scalarText struct {
	value, shown string
	node         *yaml.Node
	fromSubst    bool
}

// text reads a scalar node with substitution; ok is false after a problem.
func (d *doc) text(n *yaml.Node, field string) (scalarText, bool) {
	n = deref(n)
	if n.Kind != yaml.ScalarNode {
		d.problemAt(n, field, "want a single value, got %s", kindName(n))
		return scalarText{}, false
	}
	x := d.sub.expand(n.Value)
	for _, msg := range x.errs {
		d.problemAt(n, field, "%s", msg)
	}
	if len(x.errs) > 0 {
		return scalarText{}, false
	}
	shown := strconv.Quote(x.value)
	if x.secret {
		shown = strconv.Quote(n.Value) + " (a secret)"
	} else if n.ShortTag() != "!!str" {
		shown = n.Value
	}
	return scalarText{value: x.value, shown: shown, node: n, fromSubst: x.value != n.Value}, true
}

// scalar reads key as text; present is false for absent keys and after a
// reported problem.
func (o *obj) scalar(key string) (scalarText, bool) {
	e, ok := o.get(key)
	if !ok {
		return scalarText{}, false
	}
	return o.d.text(e.val, o.field(key))
}

// str reads an optional string.
func (o *obj) str(key, def string) string {
	t, ok := o.scalar(key)
	if !ok {
		return def
	}
	return t.value
}

// reqStr reads a required string.
func (o *obj) reqStr(key string) (string, bool) {
	if !o.has(key) {
		o.known[key] = true
		o.missing(key)
		return "", false
	}
	t, ok := o.scalar(key)
	if ok && t.value == "" {
		o.problem(key, "needs a value")
		return "", false
	}
	return t.value, ok
}

// enum reads an optional value from a fixed set.
func (o *obj) enum(key, def string, allowed ...string) string {
	t, ok := o.scalar(key)
	if !ok {
		return def
	}
	for _, a := range allowed {
		if t.value == a {
			return a
		}
	}
	o.problem(key, "want one of %s, got %s%s", strings.Join(allowed, ", "), t.shown, didYouMean(t.value, allowed))
	return def
}

// integer reads an optional integer within [min, max].
func (o *obj) integer(key string, def, min, max int) int {
	t, ok := o.scalar(key)
	if !ok {
		return def
	}
	var v int64
	var err error
	if t.node.ShortTag() == "!!int" && !t.fromSubst {
		err = t.node.Decode(&v)
	} else {
		v, err = strconv.ParseInt(strings.TrimSpace(t.value), 10, 64)
	}
	if err != nil {
		o.problem(key, "want a whole number, got %s", t.shown)
		return def
	}
	if v < int64(min) || v > int64(max) {
		o.problem(key, "want a number from %d to %d, got %d", min, max, v)
		return def
	}
	return int(v)
}

// positive reads an optional number greater than zero.
func (o *obj) positive(key string, def float64) float64 {
	t, ok := o.scalar(key)
	if !ok {
		return def
	}
	v, err := strconv.ParseFloat(strings.TrimSpace(t.value), 64)
	if err != nil || v != v {
		o.problem(key, "want a number, got %s", t.shown)
		return def
	}
	if v <= 0 || v > 1e9 {
		o.problem(key, "want a number above 0 (and at most 1e9), got %s", t.value)
		return def
	}
	return v
}

// boolean reads an optional true or false.
func (o *obj) boolean(key string, def bool) bool {
	t, ok := o.scalar(key)
	if !ok {
		return def
	}
	switch strings.ToLower(t.value) {
	case "true":
		return true
	case "false":
		return false
	}
	o.problem(key, "want true or false, got %s", t.shown)
	return def
}

// child reads an optional nested mapping.
func (o *obj) child(key string) *obj {
	e, ok := o.get(key)
	if !ok {
		return o.d.object(o.field(key), o.keyLine(key), nil)
	}
	return o.d.object(o.field(key), e.key.Line, e.val)
}

// named is one entry of a mapping of names (destinations, connections,
// headers), in file order.
type named struct {
	name  string
	key   *yaml.Node
	val   *yaml.Node
	field string
}

// entries reads a mapping whose keys are names chosen by the user.
func (o *obj) entries(key string) (list []named, present bool) {
	e, ok := o.get(key)
	if !ok {
		return nil, false
	}
	m := o.d.object(o.field(key), e.key.Line, e.val)
	if m.broken {
		return nil, true
	}
	for _, k := range m.order {
		me := m.m[k]
		list = append(list, named{name: k, key: me.key, val: me.val, field: m.field(k)})
	}
	return list, true
}

// list reads an optional sequence; a single scalar counts as a list of one.
func (o *obj) list(key string) (items []*yaml.Node, present bool) {
	e, ok := o.get(key)
	if !ok {
		return nil, false
	}
	switch e.val.Kind {
	case yaml.SequenceNode:
		for _, it := range e.val.Content {
			items = append(items, deref(it))
		}
		return items, true
	case yaml.ScalarNode:
		return []*yaml.Node{e.val}, true
	}
	o.problem(key, "want a list, got %s", kindName(e.val))
	return nil, true
}

// finish reports keys that nobody read, except top-level keys starting with
// "x-", which hold YAML anchors for reuse further down. elsewhere maps keys that are valid
// in a sibling variant (another source type, say) to a hint naming where
// they belong.
func (o *obj) finish(elsewhere map[string]string) {
	if o.broken {
		return
	}
	var known []string
	for k := range o.known {
		known = append(known, k)
	}
	sort.Strings(known)
	for _, k := range o.order {
		if o.known[k] {
			continue
		}
		if o.path == "" && strings.HasPrefix(k, "x-") {
			continue // a place for YAML anchors, as in Compose files
		}
		e := o.m[k]
		msg := "unknown key"
		if hint, ok := elsewhere[k]; ok {
			msg = fmt.Sprintf("unknown key here: %s", hint)
		} else if dym := didYouMean(k, known); dym != "" {
			msg += dym
		}
		o.d.probs.addf(o.d.file, e.key.Line, e.key.Column, o.field(k), "%s", msg)
	}
}
