// Command gen writes the files generated from internal/typetable's table. It is run by
// `go generate ./internal/typetable` and writes relative to the module root, which it finds
// by walking up from the working directory to go.mod.
package main

import (
	"fmt"
	"os"
	"path/filepath"

	"github.com/stromdb/strom/internal/typetable"
)

func main() {
	if err := run(); err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
}

func run() error {
	root, err := os.Getwd()
	if err != nil {
		return err
	}
	for {
		if _, err := os.Stat(filepath.Join(root, "go.mod")); err == nil {
			break
		}
		parent := filepath.Dir(root)
		if parent == root {
			return fmt.Errorf("no go.mod above the working directory")
		}
		root = parent
	}
	files, err := typetable.Generate(typetable.Roots)
	if err != nil {
		return err
	}
	for path, src := range files {
		if err := os.WriteFile(filepath.Join(root, path), src, 0o644); err != nil {
			return err
		}
	}
	return nil
}
