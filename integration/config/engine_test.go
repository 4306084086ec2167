package config

import "testing"

// TestRuntimeWorkers: runtime.workers reaches Engine.Runtime (unset, it
// is 0, the runtime's default: TestDefaults).
func TestRuntimeWorkers(t *testing.T) {
	for _, tc := range []struct {
		name, yaml string
		want       int
	}{
		{"set", "runtime:\n  workers: 4\n", 4},
		{"lowest", "runtime: { workers: 1 }\n", 1},
	} {
		t.Run(tc.name, func(t *testing.T) {
			p, err := Load(writeProject(t, map[string]string{"ductus.yaml": tc.yaml}), env(nil))
			if err != nil {
				t.Fatal(err)
			}
			if got := p.Engine.Runtime.Workers; got != tc.want {
				t.Errorf("workers = %d, want %d", got, tc.want)
			}
		})
	}
}
