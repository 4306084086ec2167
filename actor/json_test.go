package actor

import (
	"fmt"
	"math/rand"
	"strings"
	"testing"
)

// TestCheckFastPathAgrees compares Check, whose fast path accepts plain
// JSON, with the token walk alone on hand-picked and random inputs: both
// must accept and refuse the same documents, with the same reason.
func TestCheckFastPathAgrees(t *testing.T) {
	cases := []string{
		`null`, `1`, `"x"`, `{}`, `[]`, ` {"a":1} `, `{"a":1,"b":2}`, `{"a":1,"a":2}`, `{"a":{"a":1},"b":{"a":1}}`,
		`{"a":{"b":1,"b":2}}`, `[{"a":1},{"a":1}]`, `{"a\\u0062":1,"ab":2}`, `{"a\\"b":1,"a\\"b":2}`, `{"x":"a,b:c{"}`,
		`{"x":"}","y":"{","x":1}`, `[[[[1]]]]`, `{"a":[{"b":[{"c":{}}]}]}`, `{"a":1}{"b":2}`, `{"a":1,}`, `{"a"}`,
		`[1,2`, `"\\ud800"`, `{"a":NaN}`, `{"é":1,"é":2}`, `{"k":"\\\\","k":1}`, ``, `  `, `{"":1,"":2}`,
	}
	var many []string
	for i := 0; i < 40; i++ {
		many = append(many, fmt.Sprintf(`"k%d":%d`, i, i))
	}
	cases = append(cases, "{"+strings.Join(many, ",")+"}", "{"+strings.Join(many, ",")+`,"k3":0}`)
	rng := rand.New(rand.NewSource(1))
	atoms := []string{`1`, `"a"`, `"b"`, `true`, `null`, `"\\u0061"`, `"{"`, `"\\""`}
	keys := []string{`"a"`, `"b"`, `"c"`, `"\\u0061"`, `"a\\n"`, `"{"`}
	var gen func(d int) string
	gen = func(d int) string {
		if d > 5 || rng.Intn(3) == 0 {
			return atoms[rng.Intn(len(atoms))]
		}
		n := rng.Intn(4)
		parts := make([]string, n)
		if rng.Intn(2) == 0 {
			for i := range parts {
				parts[i] = gen(d + 1)
			}
			return "[" + strings.Join(parts, ",") + "]"
		}
		for i := range parts {
			parts[i] = keys[rng.Intn(len(keys))] + ":" + gen(d+1)
		}
		return "{" + strings.Join(parts, ",") + "}"
	}
	for i := 0; i < 5000; i++ {
		cases = append(cases, gen(0))
	}
	for _, c := range cases {
		for _, depth := range []int{0, 1, 2, 3, 64} {
			got, want := Check("x", []byte(c), depth), checkTokens("x", []byte(c), depth)
			if fmt.Sprint(got) != fmt.Sprint(want) {
				t.Fatalf("Check(%s, depth %d) = %v; the token walk says %v", c, depth, got, want)
			}
		}
	}
}

func BenchmarkCheckState(b *testing.B) {
	raw := []byte(`{"n":12345,"status":"open","items":[{"id":"a1","qty":2},{"id":"b2","qty":1}],"note":"x"}`)
	for i := 0; i < b.N; i++ {
		if err := Check("state", raw, 64); err != nil {
			b.Fatal(err)
		}
	}
}

func BenchmarkCheckTokensState(b *testing.B) {
	raw := []byte(`{"n":12345,"status":"open","items":[{"id":"a1","qty":2},{"id":"b2","qty":1}],"note":"x"}`)
	for i := 0; i < b.N; i++ {
		if err := checkTokens("state", raw, 64); err != nil {
			b.Fatal(err)
		}
	}
}
