package cmalloc

import (
	"os"
	"os/exec"
	"strings"
	"testing"
)

// TestTunedAtLoad checks that glibc took both settings when the test binary was loaded.
func TestTunedAtLoad(t *testing.T) {
	if os.Getenv("MALLOC_ARENA_MAX") != "" || os.Getenv("MALLOC_MMAP_THRESHOLD_") != "" {
		if got := Current(); got != FromEnvironment && got != NotGlibc {
			t.Fatalf("state %v with the environment set", got)
		}
		return
	}
	switch got := Current(); got {
	case Tuned:
	case NotGlibc:
		t.Skip("no glibc allocator in this build")
	default:
		t.Fatalf("state %v, want tuned", got)
	}
}

// TestEnvironmentWins re-runs the test binary with MALLOC_ARENA_MAX set: the operator's
// setting must be left alone.
func TestEnvironmentWins(t *testing.T) {
	if Current() == NotGlibc {
		t.Skip("no glibc allocator in this build")
	}
	if os.Getenv("CMALLOC_CHILD") != "" {
		if got := Current(); got != FromEnvironment {
			t.Fatalf("state %v, want from environment", got)
		}
		return
	}
	cmd := exec.Command(os.Args[0], "-test.run", "^TestEnvironmentWins$", "-test.v")
	cmd.Env = append(os.Environ(), "CMALLOC_CHILD=1", "MALLOC_ARENA_MAX=4")
	out, err := cmd.CombinedOutput()
	if err != nil || !strings.Contains(string(out), "--- PASS") {
		t.Fatalf("child: %v\n%s", err, out)
	}
}

// TestSettingsMatch keeps the C constructor's values (cgo CFLAGS) equal to the constants.
func TestSettingsMatch(t *testing.T) {
	src, err := os.ReadFile("cmalloc_glibc.go")
	if err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{"-DSTROM_ARENAS=1 ", "-DSTROM_MMAP_THRESHOLD=131072"} {
		if !strings.Contains(string(src), want) {
			t.Errorf("cmalloc_glibc.go lacks %q", want)
		}
	}
	if Arenas != 1 || MmapThreshold != 131072 {
		t.Errorf("constants changed: update the CFLAGS of cmalloc_glibc.go and this test")
	}
}
