package lakehost

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"io"
	"log/slog"
)

// relayLogs logs, with the server's logger, what the child writes to its stderr: its slog
// records as JSON lines (each re-logged at its level, with its message and attributes, so they
// look and filter like the server's own), and any other line (a panic's, say) as an error.
func relayLogs(r io.Reader, log *slog.Logger) {
	sc := bufio.NewScanner(r)
	sc.Buffer(make([]byte, 64<<10), 1<<20)
	ctx := context.Background()
	for sc.Scan() {
		line := sc.Bytes()
		level, msg, attrs, ok := parseRecord(line)
		if !ok {
			log.Error("lake tiering process output", "line", string(line))
			continue
		}
		log.LogAttrs(ctx, level, msg, attrs...)
	}
}

// parseRecord parses one line of slog's JSON handler, keeping the attributes' order and
// dropping the time (the server's logger adds its own).
func parseRecord(line []byte) (level slog.Level, msg string, attrs []slog.Attr, ok bool) {
	dec := json.NewDecoder(bytes.NewReader(line))
	dec.UseNumber()
	if t, err := dec.Token(); err != nil || t != json.Delim('{') {
		return 0, "", nil, false
	}
	for dec.More() {
		t, err := dec.Token()
		if err != nil {
			return 0, "", nil, false
		}
		key, _ := t.(string)
		var v any
		if err := dec.Decode(&v); err != nil {
			return 0, "", nil, false
		}
		switch key {
		case slog.TimeKey:
		case slog.LevelKey:
			s, _ := v.(string)
			if level.UnmarshalText([]byte(s)) != nil {
				level = slog.LevelInfo
			}
		case slog.MessageKey:
			msg, _ = v.(string)
		default:
			attrs = append(attrs, slog.Any(key, v))
		}
	}
	return level, msg, attrs, true
}
