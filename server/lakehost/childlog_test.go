package lakehost

import (
	"bytes"
	"log/slog"
	"strings"
	"testing"
)

// The child's JSON log lines come out of the server's logger at their level, with their
// message and attributes in order; other output is logged as an error, and the server's
// level filter applies.
func TestRelayLogs(t *testing.T) {
	var buf bytes.Buffer
	log := slog.New(slog.NewTextHandler(&buf, &slog.HandlerOptions{Level: slog.LevelInfo,
		ReplaceAttr: func(_ []string, a slog.Attr) slog.Attr {
			if a.Key == slog.TimeKey {
				return slog.Attr{}
			}
			return a
		}}))
	in := strings.Join([]string{
		`{"time":"2026-12-01T00:00:00Z","level":"WARN","msg":"lake compaction failed","table":"fluss.t","err":"boom","n":3}`,
		`{"time":"2026-12-01T00:00:00Z","level":"DEBUG","msg":"hidden"}`,
		`panic: runtime error`,
	}, "\n")
	relayLogs(strings.NewReader(in), log.With("role", "lake"))
	want := `level=WARN msg="lake compaction failed" role=lake table=fluss.t err=boom n=3
level=ERROR msg="lake tiering process output" role=lake line="panic: runtime error"
`
	if buf.String() != want {
		t.Errorf("relayed:\n%s\nwant:\n%s", buf.String(), want)
	}
}
