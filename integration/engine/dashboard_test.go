package engine

import (
	"bytes"
	"encoding/json"
	"os"
	"regexp"
	"strings"
	"testing"
)

// dashboardFile is the Grafana dashboard shipped with the engine.
const dashboardFile = "../../docs/grafana/ductus-engine.json"

// checkDashboard fails for a metric the dashboard queries that the
// engine's /metrics (exposition, after a delivery, a retry and a
// quarantine) does not serve, so the dashboard cannot drift from the
// code.
func checkDashboard(t *testing.T, exposition []byte) {
	t.Helper()
	raw, err := os.ReadFile(dashboardFile)
	if err != nil {
		t.Fatal(err)
	}
	var d struct {
		Panels []struct {
			Title   string `json:"title"`
			Targets []struct {
				Expr string `json:"expr"`
			} `json:"targets"`
		} `json:"panels"`
	}
	if err := json.Unmarshal(raw, &d); err != nil {
		t.Fatalf("%s: %v", dashboardFile, err)
	}
	served := map[string]bool{}
	for _, line := range bytes.Split(exposition, []byte("\n")) {
		if name, ok := bytes.CutPrefix(line, []byte("# TYPE ")); ok {
			served[string(bytes.Fields(name)[0])] = true
		}
	}
	metric := regexp.MustCompile(`ductus_[a-z_]+`)
	if len(d.Panels) == 0 {
		t.Fatalf("%s has no panels", dashboardFile)
	}
	for _, p := range d.Panels {
		if len(p.Targets) == 0 {
			t.Errorf("panel %q queries nothing", p.Title)
		}
		for _, tg := range p.Targets {
			names := metric.FindAllString(tg.Expr, -1)
			if len(names) == 0 {
				t.Errorf("panel %q: %q queries no ductus metric", p.Title, tg.Expr)
			}
			for _, n := range names {
				base := n
				for _, suffix := range []string{"_bucket", "_sum", "_count"} {
					if b, ok := strings.CutSuffix(n, suffix); ok && served[b] {
						base = b
					}
				}
				if !served[base] {
					t.Errorf("panel %q queries %s, which /metrics does not serve", p.Title, n)
				}
			}
		}
	}
}
