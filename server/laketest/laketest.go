// Package laketest builds the data lake tiering program (cmd/strom-lake) for tests that start
// a lake-enabled server in their own process, where lakehost cannot find it next to the
// executable (the test binary).
package laketest

import (
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"sync"
	"testing"
)

var (
	once   sync.Once
	binary string
	err    error
)

// Binary returns the path of a strom-lake built from this module's source, building it once per
// test process (Go's build cache makes later builds cheap). It is one file per user under the
// temporary directory, replaced atomically by each build, so that test runs leave nothing more
// behind and a concurrent test process keeps a complete binary.
func Binary(t testing.TB) string {
	t.Helper()
	once.Do(func() { binary, err = build() })
	if err != nil {
		t.Fatalf("laketest: %v", err)
	}
	return binary
}

// Options returns the server options of a lake-enabled server using Binary: datalake.format
// and datalake.tiering.binary.
func Options(t testing.TB) map[string]string {
	return map[string]string{"datalake.format": "iceberg", "datalake.tiering.binary": Binary(t)}
}

func build() (string, error) {
	_, file, _, ok := runtime.Caller(0)
	if !ok {
		return "", fmt.Errorf("cannot locate the module source")
	}
	module := filepath.Join(filepath.Dir(file), "..", "..")
	dir := filepath.Join(os.TempDir(), fmt.Sprintf("strom-lake-test-%d", os.Getuid()))
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return "", err
	}
	bin := filepath.Join(dir, "strom-lake")
	tmp := fmt.Sprintf("%s.%d", bin, os.Getpid())
	cmd := exec.Command("go", "build", "-o", tmp, "./cmd/strom-lake")
	cmd.Dir = module
	if out, err := cmd.CombinedOutput(); err != nil {
		os.Remove(tmp)
		return "", fmt.Errorf("build strom-lake: %v\n%s", err, out)
	}
	if err := os.Rename(tmp, bin); err != nil {
		os.Remove(tmp)
		return "", err
	}
	return bin, nil
}
