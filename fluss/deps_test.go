package fluss

import (
	"os/exec"
	"strings"
	"testing"
)

// The client is a library: building it must not pull the server into a user's module. Its
// transport lives in internal/wire next to the server's side of the protocol, so this test
// checks that no package under server/ is among its dependencies.
func TestNoServerDependencies(t *testing.T) {
	goTool, err := exec.LookPath("go")
	if err != nil {
		t.Skip("no go command on PATH")
	}
	out, err := exec.Command(goTool, "list", "-deps", ".").Output()
	if err != nil {
		t.Fatalf("go list -deps: %v", err)
	}
	for _, pkg := range strings.Fields(string(out)) {
		if strings.HasPrefix(pkg, "github.com/stromdb/strom/server") || strings.HasPrefix(pkg, "github.com/stromdb/strom/cmd") {
			t.Errorf("package fluss depends on %s", pkg)
		}
	}
}
