package actor

import (
	"bytes"
	"encoding"
	"encoding/json"
	"fmt"
	"reflect"
	"sort"
	"strings"
	"sync"
	"unicode"
)

// encoding/json matches object keys to struct fields ignoring case, so
// {"n":1,"N":2} decodes into a struct with the last value silently winning,
// and two struct fields that encode to the same name are silently dropped
// from both directions. The strict JSON rules close both holes: arguments
// decoding into a struct may not hold keys equal ignoring case, and a type
// whose state or arguments would be ambiguous is refused at registration.

// jsonField is a struct field as encoding/json sees it.
type jsonField struct {
	name   string // the JSON name
	goName string // for messages: the field's Go path
	depth  int    // embedding depth
	tagged bool   // named by a json tag
	typ    reflect.Type
}

var (
	jsonUnmarshaler = reflect.TypeFor[json.Unmarshaler]()
	textUnmarshaler = reflect.TypeFor[encoding.TextUnmarshaler]()
	jsonMarshaler   = reflect.TypeFor[json.Marshaler]()
)

// custom reports whether t decodes or encodes itself, so its fields are
// not encoding/json's business (time.Time, json.RawMessage, ...).
func custom(t reflect.Type) bool {
	for _, i := range []reflect.Type{jsonUnmarshaler, textUnmarshaler, jsonMarshaler} {
		if t.Implements(i) || reflect.PointerTo(t).Implements(i) {
			return true
		}
	}
	return false
}

// foldName is the case-folded form encoding/json compares names by.
func foldName(s string) string {
	return strings.Map(func(r rune) rune { return unicode.ToLower(unicode.ToUpper(r)) }, s)
}

// candidateFields lists t's fields that encoding/json considers, promoting
// the fields of untagged embedded structs (breadth first, as it does).
func candidateFields(t reflect.Type) []jsonField {
	var out []jsonField
	type level struct {
		typ    reflect.Type
		prefix string
	}
	current := []level{{typ: t}}
	visited := map[reflect.Type]bool{}
	for depth := 0; len(current) > 0; depth++ {
		var next []level
		for _, lv := range current {
			if visited[lv.typ] {
				continue
			}
			visited[lv.typ] = true
			for i := 0; i < lv.typ.NumField(); i++ {
				f := lv.typ.Field(i)
				ft := f.Type
				if f.Anonymous && ft.Kind() == reflect.Pointer {
					ft = ft.Elem()
				}
				if !f.IsExported() && !(f.Anonymous && ft.Kind() == reflect.Struct) {
					continue
				}
				tag := f.Tag.Get("json")
				if tag == "-" {
					continue
				}
				name, _, _ := strings.Cut(tag, ",")
				if f.Anonymous && name == "" && ft.Kind() == reflect.Struct {
					next = append(next, level{typ: ft, prefix: lv.prefix + f.Name + "."})
					continue
				}
				if !f.IsExported() {
					continue
				}
				jf := jsonField{name: name, goName: lv.prefix + f.Name, depth: depth, tagged: name != "", typ: f.Type}
				if name == "" {
					jf.name = f.Name
				}
				out = append(out, jf)
			}
		}
		current = next
	}
	return out
}

// structFields returns the fields encoding/json uses for t, keyed by their
// folded name. It fails where a name is ambiguous: two fields at the same
// depth with the same JSON name (encoding/json drops both), or two names
// equal ignoring case (a decoded key could fill either).
func structFields(t reflect.Type) (map[string]jsonField, error) {
	if c, ok := fieldCache.Load(t); ok {
		e := c.(cachedFields)
		return e.fields, e.err
	}
	fields, err := computeFields(t)
	fieldCache.Store(t, cachedFields{fields, err})
	return fields, err
}

// fieldCache memoises structFields: CheckArguments runs on every enqueue.
var fieldCache sync.Map // reflect.Type -> cachedFields

type cachedFields struct {
	fields map[string]jsonField
	err    error
}

func computeFields(t reflect.Type) (map[string]jsonField, error) {
	byName := map[string][]jsonField{}
	for _, f := range candidateFields(t) {
		byName[f.name] = append(byName[f.name], f)
	}
	names := make([]string, 0, len(byName))
	for n := range byName {
		names = append(names, n)
	}
	sort.Strings(names)
	out := map[string]jsonField{}
	for _, n := range names {
		f, err := dominant(t, byName[n])
		if err != nil {
			return nil, err
		}
		key := foldName(f.name)
		if prev, dup := out[key]; dup {
			return nil, fmt.Errorf("%s: fields %s (%q) and %s (%q) have JSON names equal ignoring case; decoding matches keys case-insensitively, so one would overwrite the other",
				t, prev.goName, prev.name, f.goName, f.name)
		}
		out[key] = f
	}
	return out, nil
}

// dominant applies encoding/json's rule for fields sharing a name: the
// shallowest wins, a tagged one over untagged ones at that depth, and a
// tie is ambiguous.
func dominant(t reflect.Type, fs []jsonField) (jsonField, error) {
	sort.SliceStable(fs, func(i, j int) bool { return fs[i].depth < fs[j].depth })
	top := fs[:1]
	for _, f := range fs[1:] {
		if f.depth == top[0].depth {
			top = append(top, f)
		}
	}
	if len(top) == 1 {
		return top[0], nil
	}
	var tagged []jsonField
	for _, f := range top {
		if f.tagged {
			tagged = append(tagged, f)
		}
	}
	if len(tagged) == 1 {
		return tagged[0], nil
	}
	return jsonField{}, fmt.Errorf("%s: fields %s and %s both encode as %q, so encoding/json silently drops both", t, top[0].goName, top[1].goName, top[0].name)
}

// checkTypeNames walks every struct reachable from t (through pointers,
// slices, arrays, maps and fields) and refuses ambiguous field names.
func checkTypeNames(t reflect.Type, seen map[reflect.Type]bool) error {
	for t.Kind() == reflect.Pointer {
		t = t.Elem()
	}
	if seen[t] || custom(t) {
		return nil
	}
	seen[t] = true
	switch t.Kind() {
	case reflect.Slice, reflect.Array, reflect.Map:
		return checkTypeNames(t.Elem(), seen)
	case reflect.Struct:
		fields, err := structFields(t)
		if err != nil {
			return err
		}
		keys := make([]string, 0, len(fields))
		for k := range fields {
			keys = append(keys, k)
		}
		sort.Strings(keys)
		for _, k := range keys {
			if err := checkTypeNames(fields[k].typ, seen); err != nil {
				return err
			}
		}
	}
	return nil
}

// checkFoldedKeys refuses, in every JSON object of raw that decodes into a
// struct of t, two keys equal ignoring case. Objects decoding into maps
// keep their keys as written, so they may differ only in case.
func checkFoldedKeys(what string, raw []byte, t reflect.Type) error {
	if len(raw) == 0 || string(raw) == "null" || !needsFoldCheck(t, map[reflect.Type]bool{}) {
		return nil // null sets no field (and is the arguments of most messages)
	}
	dec := json.NewDecoder(bytes.NewReader(raw))
	dec.UseNumber()
	var v any
	if err := dec.Decode(&v); err != nil {
		return nil // malformed JSON is reported by the decode that follows
	}
	return foldWalk(what, v, t)
}

// needsFoldCheck reports whether any struct is reachable from t, so plain
// arguments (an int, a map of strings) skip the walk.
func needsFoldCheck(t reflect.Type, seen map[reflect.Type]bool) bool {
	for t.Kind() == reflect.Pointer {
		t = t.Elem()
	}
	if seen[t] || custom(t) {
		return false
	}
	seen[t] = true
	switch t.Kind() {
	case reflect.Struct:
		return true
	case reflect.Slice, reflect.Array, reflect.Map:
		return needsFoldCheck(t.Elem(), seen)
	}
	return false
}

func foldWalk(what string, v any, t reflect.Type) error {
	for t.Kind() == reflect.Pointer {
		t = t.Elem()
	}
	if custom(t) {
		return nil
	}
	switch t.Kind() {
	case reflect.Struct:
		obj, ok := v.(map[string]any)
		if !ok {
			return nil // a type mismatch: the decode reports it
		}
		fields, err := structFields(t)
		if err != nil {
			return &JSONError{What: what, Reason: err.Error()}
		}
		keys := make([]string, 0, len(obj))
		for k := range obj {
			keys = append(keys, k)
		}
		sort.Strings(keys)
		seen := make(map[string]string, len(keys))
		for _, k := range keys {
			f := foldName(k)
			if prev, dup := seen[f]; dup {
				return &JSONError{What: what, Reason: fmt.Sprintf("keys %q and %q differ only in case (both would set the same field)", prev, k)}
			}
			seen[f] = k
			if field, ok := fields[f]; ok {
				if err := foldWalk(what, obj[k], field.typ); err != nil {
					return err
				}
			}
		}
	case reflect.Map:
		if obj, ok := v.(map[string]any); ok {
			for _, x := range obj {
				if err := foldWalk(what, x, t.Elem()); err != nil {
					return err
				}
			}
		}
	case reflect.Slice, reflect.Array:
		if arr, ok := v.([]any); ok {
			for _, x := range arr {
				if err := foldWalk(what, x, t.Elem()); err != nil {
					return err
				}
			}
		}
	}
	return nil
}
