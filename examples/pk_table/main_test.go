package main

import (
	"strings"
	"testing"

	"github.com/stromdb/strom/fluss/flusstest"
)

// TestExample runs the example against an in-process server.
func TestExample(t *testing.T) {
	srv := flusstest.Start(t, nil)
	var out strings.Builder
	if err := run(t.Context(), srv.Bootstrap, &out); err != nil {
		t.Fatalf("%v\noutput:\n%s", err, out.String())
	}
	t.Log(out.String())
	if out.Len() == 0 {
		t.Fatal("no output")
	}
}
