package typetable

import (
	"bytes"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// The checked-in generated files are what the table generates: editing table.go without
// running go generate fails here.
func TestGeneratedUpToDate(t *testing.T) {
	files, err := Generate(Roots)
	if err != nil {
		t.Fatal(err)
	}
	for path, want := range files {
		got, err := os.ReadFile(filepath.Join("..", "..", path))
		if err != nil {
			t.Fatal(err)
		}
		if !bytes.Equal(got, want) {
			t.Errorf("%s is stale: run go generate ./internal/typetable", path)
		}
	}
}

// A half-added type is refused by the generator.
func TestGenerateRefusesIncompleteEntries(t *testing.T) {
	for name, mutate := range map[string]func(*Root){
		"no row codec":    func(r *Root) { r.Row = "" },
		"no arrow codec":  func(r *Root) { r.Arrow = "" },
		"no client entry": func(r *Root) { r.Client = "" },
		"no iceberg type": func(r *Root) { r.Iceberg = "" },
		"no CLI form":     func(r *Root) { r.CLI = "" },
		"no SQL":          func(r *Root) { r.SQL = nil },
		"no params":       func(r *Root) { r.Params = "" },
		"no samples":      func(r *Root) { r.Samples = nil },
		"no name":         func(r *Root) { r.Name = "" },
		"bad constant":    func(r *Root) { r.Const = "not ident" },
		"duplicate":       func(r *Root) { *r = Roots[0] },
	} {
		roots := append([]Root(nil), Roots...)
		mutate(&roots[len(roots)-1])
		if _, err := Generate(roots); err == nil || !strings.Contains(err.Error(), "typetable") {
			t.Errorf("%s: err = %v", name, err)
		}
	}
}
