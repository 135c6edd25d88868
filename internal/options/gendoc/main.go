// Command gendoc rewrites the generated option tables of docs/configuration.md from the
// option registry (internal/options). Run it with `go generate ./internal/options`.
package main

import (
	"fmt"
	"os"

	"github.com/stromdb/strom/internal/options"
)

func main() {
	if len(os.Args) != 2 {
		fmt.Fprintln(os.Stderr, "usage: gendoc docs/configuration.md")
		os.Exit(2)
	}
	path := os.Args[1]
	doc, err := os.ReadFile(path)
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
	out, err := options.SpliceDoc(string(doc), options.Markdown())
	if err != nil {
		fmt.Fprintf(os.Stderr, "%s: %v\n", path, err)
		os.Exit(1)
	}
	if err := os.WriteFile(path, []byte(out), 0o644); err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
}
