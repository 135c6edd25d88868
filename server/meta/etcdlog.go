package meta

import (
	"context"
	"errors"
	"log/slog"
	"runtime"
	"slices"
	"strings"
	"sync/atomic"

	"go.uber.org/zap"
	"go.uber.org/zap/zapcore"
)

// etcdLogger returns the zap logger the embedded etcd logs to: its warnings and errors go to
// log, and a Fatal — which etcd uses for I/O errors it cannot continue after, such as a full
// disk while saving raft state or committing to its database — calls onFatal and ends only the
// goroutine that logged it (runtime.Goexit) instead of exiting the process, so the node can
// shut down cleanly and say why. Panics are logged before zap panics.
func etcdLogger(log *slog.Logger, closing *atomic.Bool, onFatal func(error)) *zap.Logger {
	core := &slogCore{log: log, closing: closing}
	return zap.New(core, zap.WithFatalHook(fatalHook(onFatal)))
}

// quietEtcdWarnings are warnings etcd logs on every start about choices made here on purpose:
// gRPC and HTTP share the (unix socket) client listener, and auth tokens are unused.
var quietEtcdWarnings = []string{
	"Running http and grpc server on single port",
	"simple token is not cryptographically signed",
}

// termNotYetWritten reports etcd's storage-version monitor running before the new member's
// first term is committed to its backend: it logs "missing term information" once (at error
// level) and succeeds on its next round. With the short election timeout of a single member
// (etcd.go) the race is hit on most first starts; it says nothing about the data.
func termNotYetWritten(fields []zapcore.Field) bool {
	for _, f := range fields {
		if err, ok := f.Interface.(error); ok && f.Type == zapcore.ErrorType && strings.Contains(err.Error(), "missing term information") {
			return true
		}
	}
	return false
}

// slogCore is a zapcore.Core writing to slog at warn level and above.
type slogCore struct {
	log     *slog.Logger
	fields  []zapcore.Field
	closing *atomic.Bool // once set, etcd's complaints about its listeners closing are debug
}

func (c *slogCore) Enabled(l zapcore.Level) bool { return l >= zapcore.WarnLevel }

func (c *slogCore) With(fields []zapcore.Field) zapcore.Core {
	return &slogCore{log: c.log, fields: append(slices.Clip(c.fields), fields...), closing: c.closing}
}

func (c *slogCore) Check(e zapcore.Entry, ce *zapcore.CheckedEntry) *zapcore.CheckedEntry {
	if c.Enabled(e.Level) {
		return ce.AddCore(e, c)
	}
	return ce
}

func (c *slogCore) Write(e zapcore.Entry, fields []zapcore.Field) error {
	level := slog.LevelWarn
	if e.Level >= zapcore.ErrorLevel {
		level = slog.LevelError
	}
	if e.Level < zapcore.DPanicLevel && (c.closing.Load() || slices.ContainsFunc(quietEtcdWarnings, func(q string) bool { return strings.Contains(e.Message, q) }) ||
		termNotYetWritten(fields)) {
		level = slog.LevelDebug
	}
	if !c.log.Enabled(context.Background(), level) {
		return nil
	}
	enc := zapcore.NewMapObjectEncoder()
	for _, f := range c.fields {
		f.AddTo(enc)
	}
	for _, f := range fields {
		f.AddTo(enc)
	}
	attrs := make([]slog.Attr, 0, len(enc.Fields)+1)
	for _, k := range slices.Sorted(func(yield func(string) bool) {
		for k := range enc.Fields {
			if !yield(k) {
				return
			}
		}
	}) {
		attrs = append(attrs, slog.Any(k, enc.Fields[k]))
	}
	if e.Level > zapcore.ErrorLevel {
		attrs = append(attrs, slog.String("etcd_level", e.Level.CapitalString()))
	}
	c.log.LogAttrs(context.Background(), level, "etcd: "+e.Message, attrs...)
	return nil
}

func (c *slogCore) Sync() error { return nil }

// fatalHook reports a Fatal entry and ends the logging goroutine.
type fatalHook func(error)

func (h fatalHook) OnWrite(ce *zapcore.CheckedEntry, fields []zapcore.Field) {
	msg := ce.Message
	for _, f := range fields {
		if f.Type == zapcore.ErrorType {
			if err, ok := f.Interface.(error); ok {
				msg += ": " + err.Error()
			}
		}
	}
	h(errors.New(msg))
	runtime.Goexit()
}
