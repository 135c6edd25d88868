package lake

import (
	"context"
	"errors"
	"fmt"
	"iter"
	"log/slog"
	"maps"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"sync"
	"time"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/apache/arrow-go/v18/arrow/memory"
	"github.com/apache/iceberg-go"
	"github.com/apache/iceberg-go/catalog"
	"github.com/apache/iceberg-go/table"
	"github.com/google/uuid"

	"github.com/stromdb/strom/internal/arrowlog"
	"github.com/stromdb/strom/internal/metadata"
	"github.com/stromdb/strom/internal/record"
	"github.com/stromdb/strom/server/cluster"
	"github.com/stromdb/strom/server/lakeconf"
)

// Bucket is one bucket the tablet server leads, as the tiering sees it.
type Bucket struct {
	Table     *cluster.TableInfo
	Partition *cluster.PartitionInfo // nil for non-partitioned tables
	ID        cluster.Bucket
	Log       BucketLog
}

// BucketLog is a bucket's log as the tiering reads it: in the tiering process, the tablet
// server's log read through the lake host (cmd/strom-lake); in tests, a local log (LocalLog).
type BucketLog interface {
	LogStartOffset() int64
	HighWatermark() int64
	// ReadBatches returns the whole record batches from offset on, at least one when there is
	// one below the high watermark, within about maxBytes.
	ReadBatches(offset int64, maxBytes int) ([]byte, error)
}

// Source lists the buckets the tablet server leads.
type Source interface {
	LakeBuckets() []Bucket
}

// Catalog is what the tiering reads of the Fluss catalog (cluster.Catalog has it).
type Catalog = lakeconf.Catalog

// Options configures a Tierer.
type Options struct {
	Config  Config
	Catalog Catalog
	Logger  *slog.Logger
	Now     func() time.Time
	// OnOffsets, when set, is called with a table's committed offsets whenever the Tierer
	// learns them (nil: forgotten after a failed commit, unknown again), in order, from the
	// tiering loop: the tiering process tells the tablet server its retention floor with it.
	OnOffsets func(tableID int64, o Offsets)
	// MaxRoundBytes bounds the log bytes one round reads per table (default 64 MiB); a table
	// with more backlog is tiered again right away.
	MaxRoundBytes int
	// Tick is how often due tables are looked for (default 250ms).
	Tick time.Duration
}

// Tierer tiers lake-enabled tables into Iceberg. Its methods are safe for concurrent use.
type Tierer struct {
	opts Options
	log  *slog.Logger
	cat  catalog.Catalog

	mu     sync.Mutex
	tables map[int64]*tableState

	stop context.CancelFunc
	done chan struct{}
}

// tableState is what the Tierer knows of one table. offsets is nil until read back from the
// table's last tiering snapshot in Iceberg, and reset to nil after a failed commit, so that
// a round never starts from offsets Iceberg does not hold.
type tableState struct {
	offsets   Offsets
	nextRound time.Time
	lastErr   string
	progress
}

// progress is what the metrics report of a table (Fluss's lakeTiering_table metrics).
type progress struct {
	path         cluster.TablePath
	freshness    time.Duration
	seen         time.Time     // first seen by the tiering
	tiered       time.Time     // last successful round; zero before the first
	duration     time.Duration // of the last round
	failures     int64
	records      int64 // Iceberg total-records after the last commit, -1 unknown
	fileBytes    int64 // Iceberg total-files-size after the last commit, -1 unknown
	pending      int64 // log records behind the tiered offsets after the last round
	running      bool
	pendingSince time.Time // when the table became due; zero while running or waiting
}

// New opens the configured catalog. Start begins tiering.
func New(ctx context.Context, opts Options) (*Tierer, error) {
	if opts.Now == nil {
		opts.Now = time.Now
	}
	if opts.Logger == nil {
		opts.Logger = slog.Default()
	}
	if opts.MaxRoundBytes <= 0 {
		opts.MaxRoundBytes = 64 << 20
	}
	if opts.Tick <= 0 {
		opts.Tick = 250 * time.Millisecond
	}
	cat, err := OpenCatalog(ctx, opts.Config)
	if err != nil {
		return nil, err
	}
	return &Tierer{opts: opts, log: opts.Logger, cat: cat, tables: map[int64]*tableState{}}, nil
}

// Start runs the tiering loop over src until Close.
func (t *Tierer) Start(src Source) {
	ctx, cancel := context.WithCancel(context.Background())
	t.stop, t.done = cancel, make(chan struct{})
	go t.loop(ctx, src)
}

// Close stops tiering (an unfinished round's files stay orphaned, uncommitted) and closes the
// catalog.
func (t *Tierer) Close() error {
	if t.stop != nil {
		t.stop()
		<-t.done
	}
	if c, ok := t.cat.(interface{ Close() error }); ok {
		return c.Close()
	}
	return nil
}

func (t *Tierer) loop(ctx context.Context, src Source) {
	defer close(t.done)
	tick := time.NewTicker(t.opts.Tick)
	defer tick.Stop()
	for {
		byTable := map[int64][]Bucket{}
		for _, b := range src.LakeBuckets() {
			if b.Table.Descriptor.Properties.DataLakeEnabled() {
				byTable[b.ID.TableID] = append(byTable[b.ID.TableID], b)
			}
		}
		for id, bs := range byTable {
			if ctx.Err() != nil {
				return
			}
			if !t.due(id, bs[0].Table) {
				continue
			}
			start := t.opts.Now()
			t.setRunning(id, true)
			more, err := t.TierOnce(ctx, bs)
			t.setRunning(id, false)
			t.scheduleNext(id, bs[0].Table, more, err, t.opts.Now().Sub(start))
		}
		select {
		case <-ctx.Done():
			return
		case <-tick.C:
		}
	}
}

func (t *Tierer) state(id int64) *tableState {
	st := t.tables[id]
	if st == nil {
		st = &tableState{progress: progress{seen: t.opts.Now(), records: -1, fileBytes: -1}}
		t.tables[id] = st
	}
	return st
}

// due reports whether the table's next round is due, noting since when it waits.
func (t *Tierer) due(id int64, info *cluster.TableInfo) bool {
	t.mu.Lock()
	defer t.mu.Unlock()
	st := t.state(id)
	st.path, st.freshness = info.Path, Freshness(&info.Descriptor)
	now := t.opts.Now()
	if now.Before(st.nextRound) {
		return false
	}
	if st.pendingSince.IsZero() {
		st.pendingSince = now
	}
	return true
}

func (t *Tierer) setRunning(id int64, running bool) {
	t.mu.Lock()
	defer t.mu.Unlock()
	st := t.state(id)
	st.running, st.pendingSince = running, time.Time{}
}

func (t *Tierer) scheduleNext(id int64, info *cluster.TableInfo, more bool, err error, took time.Duration) {
	t.mu.Lock()
	defer t.mu.Unlock()
	st := t.state(id)
	wait := Freshness(&info.Descriptor)
	if more && err == nil {
		wait = 0
	}
	st.nextRound = t.opts.Now().Add(wait)
	st.duration = took
	if err != nil {
		st.failures++
		if msg := err.Error(); msg != st.lastErr {
			t.log.Error("lake tiering failed", "table", info.Path, "table_id", id, "err", err)
			st.lastErr = msg
		}
		return
	}
	st.lastErr = ""
	st.tiered = t.opts.Now()
}

// Freshness is the table's table.datalake.freshness (Fluss's default 3 min): the interval of
// its tiering rounds.
func Freshness(d *metadata.TableDescriptor) time.Duration {
	v, ok := d.Properties[metadata.PropDatalakeFreshness]
	if !ok {
		v, _ = metadata.TablePropertyDefault(metadata.PropDatalakeFreshness)
	}
	f, err := metadata.ParseFlussDuration(v)
	if err != nil || f <= 0 {
		return 3 * time.Minute
	}
	return f
}

// Floor returns the first offset of bucket b that retention must keep: the tiered offset of a
// lake-enabled table (0 while it is not known yet, or while tiering fails), or MaxInt64 when
// the table is not lake-enabled.
func (t *Tierer) Floor(b cluster.Bucket) int64 {
	info, ok := t.opts.Catalog.TableByID(b.TableID)
	var committed Offsets
	t.mu.Lock()
	if st := t.tables[b.TableID]; st != nil {
		committed = st.offsets
	}
	t.mu.Unlock()
	return lakeconf.RetentionFloor(ok && info.Descriptor.Properties.DataLakeEnabled(), committed, BucketKey{PartitionID: b.PartitionID, Bucket: b.Bucket})
}

// Identifier is the Iceberg table a Fluss table tiers into: database.table.
func Identifier(p cluster.TablePath) table.Identifier { return table.Identifier{p.Database, p.Table} }

// ensureTable loads the table's Iceberg table, creating it (and its namespace) on first use.
func (t *Tierer) ensureTable(ctx context.Context, info *cluster.TableInfo, layout *Layout) (*table.Table, error) {
	id := Identifier(info.Path)
	tbl, err := t.cat.LoadTable(ctx, id)
	if err == nil {
		return t.addNewColumns(ctx, info, layout, tbl)
	}
	if !errors.Is(err, catalog.ErrNoSuchTable) {
		return nil, fmt.Errorf("load Iceberg table %v: %w", id, err)
	}
	if err := t.cat.CreateNamespace(ctx, table.Identifier{info.Path.Database}, nil); err != nil && !errors.Is(err, catalog.ErrNamespaceAlreadyExists) {
		return nil, fmt.Errorf("create Iceberg namespace %s: %w", info.Path.Database, err)
	}
	tbl, err = t.cat.CreateTable(ctx, id, layout.Schema,
		catalog.WithPartitionSpec(&layout.Spec), catalog.WithSortOrder(layout.SortOrder), catalog.WithProperties(layout.Properties))
	if err != nil {
		return nil, fmt.Errorf("create Iceberg table %v: %w", id, err)
	}
	t.log.Info("created Iceberg table", "table", info.Path, "location", tbl.Location())
	return tbl, nil
}

// addNewColumns brings columns added to the Fluss table by ALTER TABLE into the Iceberg table,
// as Fluss's IcebergLakeCatalog.alterTable does: each one appended as an optional column just
// before the system columns. It is a no-op when Iceberg already has every column.
func (t *Tierer) addNewColumns(ctx context.Context, info *cluster.TableInfo, layout *Layout, tbl *table.Table) (*table.Table, error) {
	sc := tbl.Schema()
	var missing []iceberg.NestedField
	for _, f := range layout.Schema.Fields() {
		if _, ok := sc.FindFieldByName(f.Name); !ok {
			missing = append(missing, f)
		}
	}
	if len(missing) == 0 {
		return tbl, nil
	}
	tx := tbl.NewTransaction()
	us := tx.UpdateSchema(true, false)
	for _, f := range missing {
		if f.Required {
			return nil, fmt.Errorf("column %s added to %s is NOT NULL; only nullable columns can be added to the Iceberg table", f.Name, info.Path)
		}
		us.AddColumn([]string{f.Name}, f.Type, f.Doc, false, nil).MoveBefore([]string{f.Name}, []string{BucketColumn})
	}
	if err := us.Commit(); err != nil {
		return nil, fmt.Errorf("add columns to Iceberg table %v: %w", Identifier(info.Path), err)
	}
	out, err := tx.Commit(ctx)
	if err != nil {
		return nil, fmt.Errorf("add columns to Iceberg table %v: %w", Identifier(info.Path), err)
	}
	t.log.Info("added columns to Iceberg table", "table", info.Path, "columns", len(missing))
	return out, nil
}

// LakeSnapshot is one tiering commit (lakeconf's, shared with the tablet server).
type LakeSnapshot = lakeconf.LakeSnapshot

// ErrNoSnapshot is returned when the table has no snapshot committed by the tiering.
var ErrNoSnapshot = lakeconf.ErrNoSnapshot

// lastTiered returns the newest snapshot of tbl committed by the tiering (with id, when id is
// non-nil) and the offsets it recorded.
func lastTiered(tbl *table.Table, id *int64) (*LakeSnapshot, error) {
	snaps := slices.Clone(tbl.Metadata().Snapshots())
	slices.SortFunc(snaps, func(a, b table.Snapshot) int {
		if a.SequenceNumber != b.SequenceNumber {
			return int(b.SequenceNumber - a.SequenceNumber)
		}
		return int(b.TimestampMs - a.TimestampMs)
	})
	for _, s := range snaps {
		if s.Summary == nil || s.Summary.Properties[CommitUserKey] != TieringUser {
			continue
		}
		if id != nil && s.SnapshotID != *id {
			continue
		}
		path := s.Summary.Properties[OffsetsProperty]
		if path == "" {
			return nil, fmt.Errorf("snapshot %d has no %s property", s.SnapshotID, OffsetsProperty)
		}
		data, err := os.ReadFile(path)
		if err != nil {
			return nil, fmt.Errorf("read tiered offsets of snapshot %d: %w", s.SnapshotID, err)
		}
		tableID, offs, err := DecodeOffsets(data)
		if err != nil {
			return nil, fmt.Errorf("tiered offsets of snapshot %d (%s): %w", s.SnapshotID, path, err)
		}
		return &LakeSnapshot{SnapshotID: s.SnapshotID, TableID: tableID, Offsets: offs}, nil
	}
	return nil, ErrNoSnapshot
}

// Snapshot returns the table's latest tiering snapshot (or the one with id snapshotID),
// read from Iceberg: what GET_LAKE_SNAPSHOT answers. It returns ErrNoSnapshot when there is
// none, or when the Iceberg table holds another (dropped) table's data of the same name.
func (t *Tierer) Snapshot(ctx context.Context, info *cluster.TableInfo, snapshotID *int64) (*LakeSnapshot, error) {
	tbl, err := t.cat.LoadTable(ctx, Identifier(info.Path))
	if errors.Is(err, catalog.ErrNoSuchTable) {
		return nil, ErrNoSnapshot
	}
	if err != nil {
		return nil, err
	}
	s, err := lastTiered(tbl, snapshotID)
	if err != nil {
		return nil, err
	}
	if s.TableID != info.ID {
		return nil, ErrNoSnapshot
	}
	return s, nil
}

// TierOnce runs one tiering round over the buckets of one table (all of the same table): it
// reads each bucket from its tiered offset up to the high watermark, and commits the rows and
// the new offsets in one Iceberg snapshot. more reports that the round stopped at the byte
// budget with data left.
func (t *Tierer) TierOnce(ctx context.Context, buckets []Bucket) (more bool, err error) {
	if len(buckets) == 0 {
		return false, nil
	}
	info := buckets[0].Table
	if f := info.Descriptor.Properties.LogFormat(); f != metadata.LogFormatArrow {
		return false, fmt.Errorf("table.log.format %s is not tiered (only ARROW)", f)
	}
	layout, err := NewLayout(&info.Descriptor)
	if err != nil {
		return false, err
	}
	tbl, err := t.ensureTable(ctx, info, layout)
	if err != nil {
		return false, err
	}
	committed, err := t.committedOffsets(info, tbl)
	if err != nil {
		return false, err
	}
	target, err := table.SchemaToArrowSchema(tbl.Schema(), nil, true, false)
	if err != nil {
		return false, err
	}
	batches, next, more, err := t.read(info, buckets, committed)
	if err != nil {
		return false, err
	}
	defer func() {
		for _, b := range batches {
			b.rec.Release()
		}
	}()
	var w *roundFiles
	if info.HasPrimaryKey() {
		w, err = t.primaryKeyChanges(ctx, tbl, layout, target, batches)
	} else {
		w, err = t.appendedRows(ctx, target, batches)
	}
	if err != nil {
		return false, err
	}
	defer w.release()
	if w.rows == 0 && w.deletes == 0 {
		return more, nil
	}
	path, err := t.writeOffsets(info, next)
	if err != nil {
		return false, err
	}
	props := iceberg.Properties{CommitUserKey: TieringUser, OffsetsProperty: path}
	newTbl, err := w.commit(ctx, tbl, props)
	if err != nil {
		// The outcome is unknown to us only in theory (the catalog commit is one SQL
		// transaction); either way the next round re-reads the offsets from Iceberg.
		t.forget(info.ID)
		return false, err
	}
	t.mu.Lock()
	t.state(info.ID).offsets = next
	t.mu.Unlock()
	t.notifyOffsets(info.ID, next)
	if autoCompaction(&info.Descriptor) {
		// A failed compaction leaves the committed round as it is; the next round retries.
		compacted, removed, err := compact(ctx, newTbl, props)
		if err != nil {
			t.log.Warn("lake compaction failed", "table", info.Path, "err", err)
		} else if removed > 0 {
			newTbl = compacted
			t.log.Info("lake compaction committed", "table", info.Path, "snapshot", newTbl.CurrentSnapshot().SnapshotID, "replaced_files", removed)
		}
	}
	if autoExpire(&info.Descriptor) {
		// As compaction: a failed expiry leaves the round committed; the next round retries.
		expired, n, err := t.expireSnapshots(ctx, info, newTbl)
		if err != nil {
			t.log.Warn("lake snapshot expiry failed", "table", info.Path, "err", err)
		} else if n > 0 {
			newTbl = expired
			t.log.Info("lake snapshots expired", "table", info.Path, "expired", n, "kept", len(newTbl.Metadata().Snapshots()))
		}
	}
	var lag int64
	for _, b := range buckets {
		lag += b.Log.HighWatermark() - next[BucketKey{PartitionID: b.ID.PartitionID, Bucket: b.ID.Bucket}]
	}
	t.mu.Lock()
	st := t.state(info.ID)
	st.pending = lag
	if sum := newTbl.CurrentSnapshot().Summary; sum != nil {
		st.records = summaryInt(sum.Properties, "total-records")
		st.fileBytes = summaryInt(sum.Properties, "total-files-size")
	}
	t.mu.Unlock()
	t.log.Info("lake tiering committed", "table", info.Path, "snapshot", newTbl.CurrentSnapshot().SnapshotID,
		"rows", w.rows, "deleted_keys", w.deletes, "buckets", len(buckets), "lag_records", lag)
	return more, nil
}

// committedOffsets returns the offsets of the table's last tiering commit, reading them from
// Iceberg when they are not known.
func (t *Tierer) committedOffsets(info *cluster.TableInfo, tbl *table.Table) (Offsets, error) {
	t.mu.Lock()
	st := t.state(info.ID)
	committed := st.offsets
	t.mu.Unlock()
	if committed != nil {
		return committed, nil
	}
	s, err := lastTiered(tbl, nil)
	switch {
	case errors.Is(err, ErrNoSnapshot):
		committed = Offsets{}
	case err != nil:
		return nil, err
	case s.TableID != info.ID:
		return nil, fmt.Errorf("Iceberg table %v holds data tiered from another table (id %d, this table is %d): drop it in Iceberg or rename the table", Identifier(info.Path), s.TableID, info.ID)
	default:
		committed = s.Offsets
	}
	t.mu.Lock()
	st.offsets = committed
	t.mu.Unlock()
	t.notifyOffsets(info.ID, committed)
	return committed, nil
}

// logBatch is one decoded log batch of a round.
type logBatch struct {
	rowsOf
	changeTypes []byte // nil for append-only batches
	from        int    // first row to tier (> 0 only when the round starts inside the batch)
}

// read decodes, per bucket, the batches from the committed offset up to the high watermark
// (within the round's byte budget), and returns them with the offsets the round ends at.
func (t *Tierer) read(info *cluster.TableInfo, buckets []Bucket, committed Offsets) (out []logBatch, next Offsets, more bool, err error) {
	defer func() {
		if err != nil {
			for _, b := range out {
				b.rec.Release()
			}
			out = nil
		}
	}()
	mem := memory.DefaultAllocator
	next = maps.Clone(committed)
	budget := t.opts.MaxRoundBytes
	schemas := map[int16]*arrow.Schema{}
	for _, b := range buckets {
		key := BucketKey{PartitionID: b.ID.PartitionID, Bucket: b.ID.Bucket}
		from, ok := committed[key]
		if start := b.Log.LogStartOffset(); !ok || from < start {
			if ok {
				t.log.Warn("lake tiering: log start is past the tiered offset, records were deleted before tiering",
					"table", info.Path, "bucket", b.ID, "tiered", from, "log_start", start)
			}
			from = start
		}
		hw := b.Log.HighWatermark()
		off := from
		for off < hw && budget > 0 {
			buf, err := b.Log.ReadBatches(off, budget)
			if err != nil {
				return out, nil, false, fmt.Errorf("read %s at %d: %w", b.ID, off, err)
			}
			if len(buf) == 0 {
				break
			}
			budget -= len(buf)
			for batch, err := range record.Iterate(buf) {
				if err != nil {
					return out, nil, false, fmt.Errorf("read %s at %d: %w", b.ID, off, err)
				}
				if batch.NextOffset() <= off {
					continue
				}
				sc, ok := schemas[batch.SchemaID()]
				if !ok {
					ms, found := t.opts.Catalog.Schema(info.ID, int32(batch.SchemaID()))
					if !found {
						return out, nil, false, fmt.Errorf("schema %d of table %s not found", batch.SchemaID(), info.Path)
					}
					if sc, err = arrowlog.ArrowSchema(ms.Columns); err != nil {
						return out, nil, false, err
					}
					schemas[batch.SchemaID()] = sc
				}
				cts, rec, err := arrowlog.Decode(sc, batch.AppendOnly(), int(batch.RecordCount()), batch.Records(), mem)
				if err != nil {
					return out, nil, false, fmt.Errorf("decode %s batch at %d: %w", b.ID, batch.BaseOffset(), err)
				}
				out = append(out, logBatch{
					rowsOf:      rowsOf{rec: rec, baseOffset: batch.BaseOffset(), commitMs: batch.CommitTimestamp(), bucket: b.ID.Bucket},
					changeTypes: cts,
					from:        int(max(off-batch.BaseOffset(), 0)),
				})
				off = batch.NextOffset()
			}
		}
		if off > from || !ok {
			next[key] = off
		}
		if off < hw {
			more = true
		}
	}
	return out, next, more, nil
}

// roundFiles is what one round commits: rows to append and, for primary-key tables,
// equality deletes (one row per changed key, key columns only).
type roundFiles struct {
	target        *arrow.Schema
	data          []arrow.RecordBatch
	deleteSchema  *arrow.Schema
	deleteRecs    []arrow.RecordBatch
	equalityIDs   []int
	rowDelta      bool // primary-key table: commit a row delta with equality deletes
	rows, deletes int64
}

func (w *roundFiles) release() {
	for _, r := range w.data {
		r.Release()
	}
	for _, r := range w.deleteRecs {
		r.Release()
	}
}

// appendedRows converts the rows of a log table's batches.
func (t *Tierer) appendedRows(ctx context.Context, target *arrow.Schema, batches []logBatch) (*roundFiles, error) {
	w := &roundFiles{target: target}
	for _, b := range batches {
		var keep []int
		if b.from > 0 {
			for i := b.from; i < int(b.rec.NumRows()); i++ {
				keep = append(keep, i)
			}
		}
		out, err := toIceberg(ctx, memory.DefaultAllocator, target, b.rowsOf, keep)
		if err != nil {
			w.release()
			return nil, fmt.Errorf("convert bucket %d batch at %d: %w", b.bucket, b.baseOffset, err)
		}
		w.rows += out.NumRows()
		w.data = append(w.data, out)
	}
	return w, nil
}

// commit writes the round's files and commits them with props in one snapshot: an append
// for log tables, a row delta (data files and equality deletes) for primary-key tables.
func (w *roundFiles) commit(ctx context.Context, tbl *table.Table, props iceberg.Properties) (*table.Table, error) {
	tx := tbl.NewTransaction()
	if !w.rowDelta {
		rdr, err := array.NewRecordReader(w.target, w.data)
		if err != nil {
			return nil, err
		}
		defer rdr.Release()
		if err := tx.Append(ctx, rdr, props); err != nil {
			return nil, fmt.Errorf("write Iceberg data files: %w", err)
		}
	} else {
		rd := tx.NewRowDelta(props)
		if len(w.data) > 0 {
			for df, err := range table.WriteRecords(ctx, tbl, w.target, retained(w.data)) {
				if err != nil {
					return nil, fmt.Errorf("write Iceberg data files: %w", err)
				}
				rd.AddRows(df)
			}
		}
		dels, err := tx.WriteEqualityDeletes(ctx, w.equalityIDs, retained(w.deleteRecs))
		if err != nil {
			return nil, fmt.Errorf("write Iceberg equality deletes: %w", err)
		}
		rd.AddDeletes(dels...)
		if err := rd.Commit(ctx); err != nil {
			return nil, fmt.Errorf("stage Iceberg row delta: %w", err)
		}
	}
	newTbl, err := tx.Commit(ctx)
	if err != nil {
		return nil, fmt.Errorf("commit Iceberg snapshot: %w", err)
	}
	return newTbl, nil
}

// retained yields recs for a consumer that releases what it consumes, keeping our references.
func retained(recs []arrow.RecordBatch) iter.Seq2[arrow.RecordBatch, error] {
	return func(yield func(arrow.RecordBatch, error) bool) {
		for _, r := range recs {
			r.Retain()
			if !yield(r, nil) {
				return
			}
		}
	}
}

func summaryInt(p iceberg.Properties, key string) int64 {
	n, err := strconv.ParseInt(p[key], 10, 64)
	if err != nil {
		return -1
	}
	return n
}

func (t *Tierer) forget(tableID int64) {
	t.mu.Lock()
	if st := t.tables[tableID]; st != nil {
		st.offsets = nil
	}
	t.mu.Unlock()
	t.notifyOffsets(tableID, nil)
}

// notifyOffsets hands a table's committed offsets (nil: unknown) to Options.OnOffsets. The
// map is never changed after it is stored, so it is passed as is.
func (t *Tierer) notifyOffsets(tableID int64, o Offsets) {
	if t.opts.OnOffsets != nil {
		t.opts.OnOffsets(tableID, o)
	}
}

// writeOffsets stores the offsets file of a commit, durably, under
// DataDir/lake/offsets/<db>/<table>-<id>/metadata/<uuid>.offsets (the layout of Fluss's
// remote lake directory); the file is never changed after it is referenced by a snapshot.
func (t *Tierer) writeOffsets(info *cluster.TableInfo, o Offsets) (string, error) {
	data, err := EncodeOffsets(info.ID, o)
	if err != nil {
		return "", err
	}
	dir, err := t.offsetsDir(info)
	if err != nil {
		return "", err
	}
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return "", err
	}
	path := filepath.Join(dir, uuid.NewString()+".offsets")
	if err := writeFileSync(path, data); err != nil {
		return "", fmt.Errorf("write tiered offsets: %w", err)
	}
	return path, nil
}

// offsetsDir is the directory of the table's offsets files.
func (t *Tierer) offsetsDir(info *cluster.TableInfo) (string, error) {
	return filepath.Abs(filepath.Join(t.opts.Config.Dir(), "offsets", info.Path.Database,
		fmt.Sprintf("%s-%d", info.Path.Table, info.ID), "metadata"))
}

func writeFileSync(path string, data []byte) error {
	tmp := path + ".tmp"
	f, err := os.Create(tmp)
	if err != nil {
		return err
	}
	if _, err := f.Write(data); err != nil {
		f.Close()
		return err
	}
	if err := f.Sync(); err != nil {
		f.Close()
		return err
	}
	if err := f.Close(); err != nil {
		return err
	}
	if err := os.Rename(tmp, path); err != nil {
		return err
	}
	d, err := os.Open(filepath.Dir(path))
	if err != nil {
		return err
	}
	defer d.Close()
	return d.Sync()
}
