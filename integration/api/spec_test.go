package api

import (
	"bytes"
	"context"
	"os"
	"os/exec"
	"path/filepath"
	"sort"
	"testing"

	"github.com/getkin/kin-openapi/openapi3"

	"github.com/ductus/ductus/integration/access"
)

// The served document is valid OpenAPI 3.1 and says so.
func TestDocumentIsValid(t *testing.T) {
	raw, err := DocumentJSON()
	if err != nil {
		t.Fatal(err)
	}
	doc, err := openapi3.NewLoader().LoadFromData(raw)
	if err != nil {
		t.Fatalf("load the served document: %v", err)
	}
	if doc.OpenAPI != "3.1.0" {
		t.Fatalf("openapi: %q, want 3.1.0", doc.OpenAPI)
	}
	if err := doc.Validate(context.Background()); err != nil {
		t.Fatalf("the document is not valid: %v", err)
	}
}

// Every operation of the document has a row in the access table and every
// row names an operation of the document; every operation that needs
// credentials says so (the document's security), and public ones do not.
func TestAccessTableCoversTheDocument(t *testing.T) {
	doc, err := Document()
	if err != nil {
		t.Fatal(err)
	}
	inDoc := map[string]bool{}
	for path, item := range doc.Paths.Map() {
		for method, op := range item.Operations() {
			inDoc[op.OperationID] = true
			rule, ok := access.Table[op.OperationID]
			if !ok {
				t.Errorf("%s %s (%s) has no row in access.Table", method, path, op.OperationID)
				continue
			}
			public := op.Security != nil && len(*op.Security) == 0
			if public != rule.Public {
				t.Errorf("%s: the document says public=%v, the access table %v", op.OperationID, public, rule.Public)
			}
		}
	}
	var extra []string
	for op := range access.Table {
		if !inDoc[op] {
			extra = append(extra, op)
		}
	}
	sort.Strings(extra)
	if len(extra) > 0 {
		t.Errorf("access.Table has rows for operations the document does not have: %v", extra)
	}
}

// api.gen.go is what oapi-codegen makes of openapi.yaml today: change the
// document, then run go generate ./integration/api.
func TestGeneratedCodeIsCurrent(t *testing.T) {
	dir := t.TempDir()
	out := filepath.Join(dir, "api.gen.go")
	cfg, err := os.ReadFile("oapi-codegen.yaml")
	if err != nil {
		t.Fatal(err)
	}
	cfg = bytes.Replace(cfg, []byte("output: api.gen.go"), []byte("output: "+out), 1)
	if err := os.WriteFile(filepath.Join(dir, "cfg.yaml"), cfg, 0o644); err != nil {
		t.Fatal(err)
	}
	cmd := exec.Command("go", "tool", "oapi-codegen", "-config", filepath.Join(dir, "cfg.yaml"), "openapi.yaml")
	if b, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("oapi-codegen: %v\n%s", err, b)
	}
	want, err := os.ReadFile(out)
	if err != nil {
		t.Fatal(err)
	}
	got, err := os.ReadFile("api.gen.go")
	if err != nil {
		t.Fatal(err)
	}
	if !bytes.Equal(got, want) {
		t.Fatal("api.gen.go is stale: run go generate ./integration/api and commit the result")
	}
}
