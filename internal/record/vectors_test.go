package record

import (
	"encoding/hex"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// loadHex reads a testdata file of hex bytes; lines starting with '#' are comments. The
// vectors come from docs/encodings.md Appendix A.
func loadHex(t testing.TB, name string) []byte {
	t.Helper()
	raw, err := os.ReadFile(filepath.Join("testdata", name))
	if err != nil {
		t.Fatal(err)
	}
	var sb strings.Builder
	for line := range strings.SplitSeq(string(raw), "\n") {
		if strings.HasPrefix(line, "#") {
			continue
		}
		sb.WriteString(strings.Join(strings.Fields(line), ""))
	}
	b, err := hex.DecodeString(sb.String())
	if err != nil {
		t.Fatalf("%s: %v", name, err)
	}
	return b
}

// mustHex decodes a hex string with optional spaces.
func mustHex(t testing.TB, s string) []byte {
	t.Helper()
	b, err := hex.DecodeString(strings.ReplaceAll(s, " ", ""))
	if err != nil {
		t.Fatal(err)
	}
	return b
}
