package actor

import (
	"encoding/json"
	"errors"
	"reflect"
	"strings"
	"testing"
	"time"
)

type foldInner struct {
	Code string `json:"code"`
}

type foldArgs struct {
	N     int                  `json:"n"`
	Inner foldInner            `json:"inner"`
	List  []foldInner          `json:"list"`
	Tags  map[string]int       `json:"tags"`
	ByKey map[string]foldInner `json:"by_key"`
	When  time.Time            `json:"when"`
	Raw   json.RawMessage      `json:"raw"`
}

func foldType() *Type[struct{}] {
	return &Type[struct{}]{Name: "fold.t", Messages: map[string]Handler[struct{}]{
		"m":     Message(func(*Context, *struct{}, foldArgs) (any, error) { return nil, nil }),
		"plain": Message(func(*Context, *struct{}, map[string]int) (any, error) { return nil, nil }),
		"k": Message(func(*Context, *struct{}, struct {
			Kind string `json:"kind"`
			S    string `json:"s"`
		}) (any, error) {
			return nil, nil
		}),
	}}
}

func TestCheckArgumentsRefusesKeysEqualIgnoringCase(t *testing.T) {
	def := foldType()
	cases := []struct {
		name    string
		message string
		raw     string
		refuse  bool
	}{
		{"distinct keys", "m", `{"n":1,"inner":{"code":"a"}}`, false},
		{"top level", "m", `{"n":1,"N":2}`, true},
		{"upper case", "m", `{"inner":{"code":"a"},"INNER":{}}`, true},
		{"Kelvin sign in a struct", "k", "{\"kind\":\"a\",\"\u212Aind\":\"b\"}", true},
		{"long s folds to s", "k", "{\"s\":\"a\",\"\u017F\":\"b\"}", true},
		{"nested struct", "m", `{"inner":{"code":"a","CODE":"b"}}`, true},
		{"struct in a slice", "m", `{"list":[{"code":"a"},{"code":"a","Code":"b"}]}`, true},
		{"struct in a map", "m", `{"by_key":{"x":{"code":"a","cOde":"b"}}}`, true},
		{"map keys may differ in case", "m", `{"tags":{"a":1,"A":2}}`, false},
		{"map of structs: keys may differ in case", "m", `{"by_key":{"a":{},"A":{}}}`, false},
		{"unknown keys equal ignoring case", "m", `{"zz":1,"ZZ":2}`, true},
		{"raw JSON is not a struct", "m", `{"raw":{"a":1,"A":2}}`, false},
		{"map arguments", "plain", `{"a":1,"A":2}`, false},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			err := def.CheckArguments(c.message, []byte(c.raw))
			switch {
			case c.refuse && (!errors.Is(err, ErrInvalidArguments) || !strings.Contains(err.Error(), "differ only in case")):
				t.Fatalf("%s: err = %v, want a refusal naming the keys", c.raw, err)
			case !c.refuse && err != nil:
				t.Fatalf("%s: refused: %v", c.raw, err)
			}
		})
	}
}

func TestRegisterRefusesAmbiguousFieldNames(t *testing.T) {
	type foldEqual struct {
		Name string `json:"name"`
		NAME string
	}
	type Base struct{ ID int }
	type overrides struct { // legal: the shallower field dominates
		Base
		ID string
	}
	type Left struct{ Tag string }
	type Right struct{ Tag string }
	type tie struct { // both promoted at the same depth: dropped by encoding/json
		Left
		Right
	}
	type nested struct {
		Items []foldEqual `json:"items"`
	}
	noop := func(*Context, *overrides, struct{}) (any, error) { return nil, nil }
	cases := []struct {
		name string
		def  Definition
		ok   bool
	}{
		{"state with names equal ignoring case", &Type[foldEqual]{Name: "f.b", Messages: map[string]Handler[foldEqual]{
			"m": Message(func(*Context, *foldEqual, struct{}) (any, error) { return nil, nil })}}, false},
		{"arguments with a promoted tie", &Type[overrides]{Name: "f.c", Messages: map[string]Handler[overrides]{
			"m": Message(func(*Context, *overrides, tie) (any, error) { return nil, nil })}}, false},
		{"arguments nesting an ambiguous struct", &Type[overrides]{Name: "f.d", Messages: map[string]Handler[overrides]{
			"m": Message(func(*Context, *overrides, nested) (any, error) { return nil, nil })}}, false},
		{"a dominating field is fine", &Type[overrides]{Name: "f.e", Messages: map[string]Handler[overrides]{"m": Message(noop)}}, true},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			err := NewRegistry().Register(c.def)
			if c.ok && err != nil {
				t.Fatalf("refused: %v", err)
			}
			if !c.ok && !errors.Is(err, ErrInvalidDefinition) {
				t.Fatalf("err = %v, want ErrInvalidDefinition", err)
			}
		})
	}
}

// A struct repeating a json tag (go vet refuses to compile one in source,
// so it is built at run time) is ambiguous too.
func TestDuplicatedTagIsAmbiguous(t *testing.T) {
	typ := reflect.StructOf([]reflect.StructField{
		{Name: "A", Type: reflect.TypeFor[int](), Tag: `json:"x"`},
		{Name: "B", Type: reflect.TypeFor[int](), Tag: `json:"x"`},
	})
	err := checkTypeNames(reflect.SliceOf(typ), map[reflect.Type]bool{})
	if err == nil || !strings.Contains(err.Error(), "silently drops both") {
		t.Fatalf("err = %v", err)
	}
}

func TestRegisterRefusesMigrationGaps(t *testing.T) {
	step := func(from int) Migration {
		return Migration{From: from, To: from + 1, Fn: func(b json.RawMessage) (json.RawMessage, error) { return b, nil }}
	}
	msgs := map[string]Handler[struct{}]{"m": Message(func(*Context, *struct{}, struct{}) (any, error) { return nil, nil })}
	cases := []struct {
		name    string
		version int
		steps   []Migration
		ok      bool
	}{
		{"no steps", 3, nil, true},
		{"complete chain", 3, []Migration{step(1), step(2)}, true},
		{"chain from a later start", 4, []Migration{step(2), step(3)}, true},
		{"gap in the middle", 4, []Migration{step(1), step(3)}, false},
		{"gap before the current version", 3, []Migration{step(1)}, false},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			err := NewRegistry().Register(&Type[struct{}]{Name: "gap.t", StateVersion: c.version, Migrations: c.steps, Messages: msgs})
			if c.ok && err != nil {
				t.Fatalf("refused: %v", err)
			}
			if !c.ok && (!errors.Is(err, ErrInvalidDefinition) || !strings.Contains(err.Error(), "no migration step")) {
				t.Fatalf("err = %v, want a refused gap", err)
			}
		})
	}
}
