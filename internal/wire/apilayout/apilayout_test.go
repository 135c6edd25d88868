package apilayout

import (
	"sort"
	"strings"
	"testing"
)

// A package that breaks each rule once: two APIs in one file, a handler in another file than
// its registration, and a handler nobody registers.
func TestCheckReportsEveryBreach(t *testing.T) {
	n, problems, err := Check("testdata/bad", "register")
	if err != nil {
		t.Fatal(err)
	}
	if n != 2 {
		t.Errorf("registrations = %d, want 2", n)
	}
	sort.Strings(problems)
	want := []string{
		"api.go registers 2 APIs; one file per API",
		"api.go registers B, but its handler service.handleB is in b.go",
		"handler service.handleC (api.go) is registered by no init function",
	}
	if strings.Join(problems, "\n") != strings.Join(want, "\n") {
		t.Errorf("problems:\n%s\nwant:\n%s", strings.Join(problems, "\n"), strings.Join(want, "\n"))
	}
}
