package kvstore

import (
	"context"
	"fmt"
	"io"
	"log/slog"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/stromdb/strom/internal/arrowlog"
	"github.com/stromdb/strom/internal/metadata"
	"github.com/stromdb/strom/internal/record"
	"github.com/stromdb/strom/internal/row"
	"github.com/stromdb/strom/server/cluster"
	"github.com/stromdb/strom/server/logstore"
)

var testBucket = cluster.Bucket{TableID: 7, PartitionID: cluster.NoPartition, Bucket: 0}

func discard() *slog.Logger { return slog.New(slog.NewTextHandler(io.Discard, nil)) }

// usersSchema is (id INT NOT NULL primary key, name STRING, age BIGINT).
func usersSchema() metadata.Schema {
	return metadata.Schema{
		Columns: []metadata.Column{
			{Name: "id", Type: metadata.DataType{Root: metadata.Int, NotNull: true}},
			{Name: "name", Type: metadata.DataType{Root: metadata.String}},
			{Name: "age", Type: metadata.DataType{Root: metadata.BigInt}},
		},
		PrimaryKey: []string{"id"},
	}
}

func usersTable(mod func(*metadata.TableConfig)) Table {
	cfg := metadata.TableConfig{LogFormat: metadata.LogFormatArrow, Compression: metadata.CompressionZstd, ZstdLevel: 3}
	if mod != nil {
		mod(&cfg)
	}
	return Table{ID: 7, SchemaID: 1, Schema: usersSchema(), Config: cfg}
}

type harness struct {
	t     testing.TB
	dir   string
	table Table
	store *Store
	log   *logstore.Log
	tab   *Tablet
	seq   int32
	// policy is the log's flush policy; the default (no fsync) keeps tests fast.
	policy logstore.FlushPolicy
	// rowCacheBytes is the store's Options.RowCacheBytes (0: the default, -1: off).
	rowCacheBytes int64
	// seqs is the store's Options.Sequences; it outlives reopen, as the metadata store does.
	seqs SequenceSource
}

func newHarness(t testing.TB, table Table) *harness {
	return newHarnessWith(t, table, logstore.FlushInterval(0))
}

func newHarnessWith(t testing.TB, table Table, policy logstore.FlushPolicy) *harness {
	return newHarnessRowCache(t, table, policy, 0)
}

func newHarnessRowCache(t testing.TB, table Table, policy logstore.FlushPolicy, rowCacheBytes int64) *harness {
	h := &harness{t: t, dir: t.TempDir(), table: table, policy: policy, rowCacheBytes: rowCacheBytes}
	h.open()
	t.Cleanup(h.close)
	return h
}

func (h *harness) open() {
	h.t.Helper()
	var err error
	h.log, err = logstore.Open(context.Background(), filepath.Join(h.dir, "log"), logstore.Options{Logger: discard(),
		FlushPolicy: h.policy, Now: func() time.Time { return time.UnixMilli(100_000) }})
	if err != nil {
		h.t.Fatalf("open log: %v", err)
	}
	h.store, err = Open(filepath.Join(h.dir, "kv"), Options{Logger: discard(), RowCacheBytes: h.rowCacheBytes, Sequences: h.seqs})
	if err != nil {
		h.t.Fatalf("open store: %v", err)
	}
	h.tab, err = h.store.OpenTablet(context.Background(), testBucket, h.table, h.log)
	if err != nil {
		h.t.Fatalf("open tablet: %v", err)
	}
}

func (h *harness) close() {
	if h.store == nil {
		return
	}
	h.tab.Close()
	h.log.Close()
	h.store.Close()
	h.store = nil
}

func (h *harness) reopen() {
	h.t.Helper()
	h.close()
	h.open()
}

// rec is one KV record: a row (nil = delete of key).
type rec struct {
	key []row.Datum
	row []row.Datum
}

func up(id int64, name any, age any) rec {
	r := []row.Datum{{I: id}, opt(name), opt(age)}
	return rec{key: []row.Datum{{I: id}}, row: r}
}

func del(id int64) rec { return rec{key: []row.Datum{{I: id}}} }

func opt(v any) row.Datum {
	switch x := v.(type) {
	case nil:
		return row.NullDatum
	case string:
		return row.Datum{B: []byte(x)}
	case int:
		return row.Datum{I: int64(x)}
	case int64:
		return row.Datum{I: x}
	case bool:
		return row.Datum{I: boolInt(x)}
	case float64:
		return row.Datum{F: x}
	}
	panic(fmt.Sprintf("opt: %T", v))
}

// kvBatch encodes records as a client would (compacted key of the key columns, row in the
// table's KV format).
func (h *harness) kvBatch(writer int64, seq int32, recs ...rec) record.KvBatch {
	h.t.Helper()
	c, err := compile(h.table)
	if err != nil {
		h.t.Fatal(err)
	}
	var krs []record.KvRecord
	for _, r := range recs {
		k, err := clientKey(h.table, c.keyTypes, r.key)
		if err != nil {
			h.t.Fatal(err)
		}
		var rb []byte
		if r.row != nil {
			if h.table.Config.KvFormat == metadata.KvFormatIndexed {
				rb, err = row.AppendIndexedRow(nil, c.types, r.row)
			} else {
				rb, err = row.AppendCompactedRow(nil, c.types, r.row)
			}
			if err != nil {
				h.t.Fatal(err)
			}
		}
		krs = append(krs, record.KvRecord{Key: k, Row: rb})
	}
	b, err := record.ParseKvBatch(record.AppendKvBatch(nil, record.KvHeader{SchemaID: h.table.SchemaID, WriterID: writer, BatchSequence: seq}, krs...))
	if err != nil {
		h.t.Fatal(err)
	}
	return b
}

// put writes recs as one idempotent batch (writer 1, next sequence) and returns the log end.
func (h *harness) put(targets []int32, recs ...rec) int64 {
	h.t.Helper()
	end, err := h.tryPut(targets, recs...)
	if err != nil {
		h.t.Fatalf("Put: %v", err)
	}
	return end
}

func (h *harness) tryPut(targets []int32, recs ...rec) (int64, error) {
	end, err := h.tab.putWait(h.kvBatch(1, h.seq, recs...), WriteOptions{TargetColumns: targets}, 100_000)
	if err == nil {
		h.seq++
	}
	return end, err
}

// get looks id up and renders the row, or "" when absent.
func (h *harness) get(id int64) string {
	h.t.Helper()
	c := h.tab.tbl
	k, err := clientKey(h.table, c.keyTypes, []row.Datum{{I: id}})
	if err != nil {
		h.t.Fatal(err)
	}
	vals, err := h.tab.Lookup([][]byte{k}, nil)
	if err != nil {
		h.t.Fatal(err)
	}
	if vals[0] == nil {
		return ""
	}
	sid, rb, err := row.SplitValue(vals[0])
	if err != nil {
		h.t.Fatal(err)
	}
	d, err := c.decodeRow(sid, rb, nil)
	if err != nil {
		h.t.Fatal(err)
	}
	return render(c.types, d)
}

// changelog reads the whole log and renders every change record as "+I(1,alice,30)";
// an empty batch renders as "∅".
func (h *harness) changelog() []string {
	h.t.Helper()
	res, err := h.log.Read(0, 1<<30, true)
	if err != nil {
		h.t.Fatal(err)
	}
	buf, err := res.AppendTo(nil)
	res.Release()
	if err != nil {
		h.t.Fatal(err)
	}
	c := h.tab.tbl
	var out []string
	for b, err := range record.Iterate(buf) {
		if err != nil {
			h.t.Fatal(err)
		}
		if err := b.Validate(); err != nil {
			h.t.Fatalf("changelog batch invalid: %v", err)
		}
		if b.RecordCount() == 0 {
			out = append(out, "∅")
			continue
		}
		if b.AppendOnly() {
			h.t.Fatalf("changelog batch is append-only")
		}
		switch c.Config.LogFormat {
		case metadata.LogFormatArrow:
			cts, rec, err := arrowlog.Decode(c.arrow, false, int(b.RecordCount()), b.Records(), nil)
			if err != nil {
				h.t.Fatal(err)
			}
			rows, err := arrowlog.RecordToRows(rec, c.cols)
			if err != nil {
				h.t.Fatal(err)
			}
			for i, r := range rows {
				out = append(out, record.ChangeType(cts[i]).ShortString()+render(c.types, r))
			}
			rec.Release()
		default:
			it := b.RowLogRecords()
			for {
				ct, rb, ok := it.Next()
				if !ok {
					break
				}
				var d []row.Datum
				if c.Config.LogFormat == metadata.LogFormatIndexed {
					d, err = row.DecodeIndexedRow(c.types, rb, nil)
				} else {
					d, err = row.DecodeCompactedRow(c.types, rb, nil)
				}
				if err != nil {
					h.t.Fatal(err)
				}
				out = append(out, ct.ShortString()+render(c.types, d))
			}
			if it.Err() != nil {
				h.t.Fatal(it.Err())
			}
		}
	}
	return out
}

func render(types []metadata.DataType, r []row.Datum) string {
	parts := make([]string, len(r))
	for i, d := range r {
		switch {
		case d.Null:
			parts[i] = "null"
		case types[i].Root == metadata.String || types[i].Root == metadata.Char:
			parts[i] = string(d.B)
		case types[i].Root == metadata.Boolean:
			parts[i] = fmt.Sprint(d.I != 0)
		case types[i].Root == metadata.Float || types[i].Root == metadata.Double:
			parts[i] = fmt.Sprint(d.F)
		default:
			parts[i] = fmt.Sprint(d.I)
		}
	}
	return "(" + strings.Join(parts, ",") + ")"
}

func eqStrings(t testing.TB, what string, got, want []string) {
	t.Helper()
	if strings.Join(got, " ") != strings.Join(want, " ") {
		t.Fatalf("%s:\n got  %v\n want %v", what, got, want)
	}
}

// putWait stages kv and waits until it is durable and applied, as PUT_KV does for one bucket.
func (t *Tablet) putWait(kv record.KvBatch, o WriteOptions, nowMs int64) (int64, error) {
	end, p, err := t.PutStaged(kv, o, nowMs)
	if err != nil {
		return 0, err
	}
	if err := p.Wait(context.Background()); err != nil {
		return 0, err
	}
	return end, nil
}

// staged reports whether the Pending has a write to wait for.
func (p Pending) staged() bool { return p.t != nil }

// clientKey encodes a primary key as a client of the table does: Paimon's encoder for
// table.datalake.format paimon (as pyfluss's, tests/compat/test_paimon_keys.py), the
// compacted one otherwise.
func clientKey(t Table, types []metadata.DataType, key []row.Datum) ([]byte, error) {
	if t.Config.DataLakeFormat == row.LakePaimon {
		return row.EncodePaimonKey(nil, types, key)
	}
	return row.EncodeKey(nil, types, key)
}

// withoutLiveKeys waits for the tablet's live-key filter to be built and turns it off, so
// that every read before a write reaches Pebble (livekeys.go).
func (h *harness) withoutLiveKeys() {
	<-h.tab.live.built
	h.tab.mu.Lock()
	h.tab.live = liveKeys{built: h.tab.live.built}
	h.tab.mu.Unlock()
}
