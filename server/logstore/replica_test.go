package logstore

import (
	"bytes"
	"errors"
	"os"
	"path/filepath"
	"slices"
	"testing"

	"github.com/stromdb/strom/internal/ferr"
	"github.com/stromdb/strom/internal/record"
)

// v2batch builds a V2 batch as a client sends it (leader epoch NoLeaderEpoch).
func v2batch(t testing.TB, writer int64, seq int32, count int32, payload int) record.Batch {
	t.Helper()
	body := bytes.Repeat([]byte{byte(count), byte(seq), 7}, payload/3+1)[:payload]
	b, err := record.AppendBatch(nil, record.MagicV2, record.V0Header{
		SchemaID: 1, AppendOnly: true, WriterID: writer, BatchSequence: seq, RecordCount: count,
	}, nil, body)
	if err != nil {
		t.Fatal(err)
	}
	return record.Batch(b)
}

func replicated(opts Options) Options {
	opts.ExternalHighWatermark = true
	return opts
}

// fetchAll reads the leader's batches from offset up to its log end, as a follower fetch.
func fetchAll(t testing.TB, l *Log, from int64) []record.Batch {
	t.Helper()
	return collectBatches(t, "ReadReplica", from, l.LogEndOffset, l.Replica().ReadReplica, false)
}

// replicate copies everything the follower lacks from the leader, then lets the leader's HW
// follow the follower's durable end (a two-replica ISR) and the follower's the leader's.
func replicate(t testing.TB, leader, follower *Log) {
	t.Helper()
	if bs := fetchAll(t, leader, follower.LogEndOffset()); len(bs) > 0 {
		if _, err := follower.Replica().AppendAsFollower(bs); err != nil {
			t.Fatalf("AppendAsFollower: %v", err)
		}
	}
	if _, err := leader.Replica().SetHighWatermark(min(leader.Replica().DurableLogEndOffset(), follower.Replica().DurableLogEndOffset())); err != nil {
		t.Fatal(err)
	}
	if _, err := follower.Replica().SetHighWatermark(leader.HighWatermark()); err != nil {
		t.Fatal(err)
	}
}

// logBytes returns the concatenated bytes of every batch below upTo (read via ReadReplica).
func logBytes(t testing.TB, l *Log, upTo int64) []byte {
	t.Helper()
	var out []byte
	for _, b := range fetchAll(t, l, l.LogStartOffset()) {
		if b.NextOffset() > upTo {
			break
		}
		out = append(out, b...)
	}
	return out
}

func TestFollowerAppendCopiesLeaderByteForByte(t *testing.T) {
	opts := replicated(Options{SegmentBytes: 600, IndexIntervalBytes: 100})
	leader := open(t, t.TempDir(), opts)
	defer leader.Close()
	follower := open(t, t.TempDir(), opts)
	defer follower.Close()
	if err := leader.Replica().AssignEpoch(3, 0); err != nil {
		t.Fatal(err)
	}
	for i := int32(0); i < 12; i++ {
		before := leader.HighWatermark()
		mustAppend(t, leader, 1000+int64(i), v2batch(t, 9, i, 3, 90))
		if leader.HighWatermark() != before {
			t.Fatalf("leader HW moved to %d without the follower", leader.HighWatermark())
		}
		if i%4 == 3 {
			replicate(t, leader, follower)
		}
	}
	replicate(t, leader, follower)
	if leader.HighWatermark() != 12*3 || follower.HighWatermark() != 12*3 {
		t.Fatalf("HW leader %d follower %d, want 36", leader.HighWatermark(), follower.HighWatermark())
	}
	if !bytes.Equal(logBytes(t, leader, 36), logBytes(t, follower, 36)) {
		t.Fatal("follower log differs from the leader's")
	}
	for _, b := range readAll(t, follower, 0) {
		if b.LeaderEpoch() != 3 {
			t.Fatalf("batch at %d has leader epoch %d, want 3", b.BaseOffset(), b.LeaderEpoch())
		}
	}
	if got := follower.Replica().EpochEntries(); !slices.Equal(got, []EpochEntry{{3, 0}}) {
		t.Fatalf("follower epochs %v", got)
	}
	// Time lookups work on the follower's indexes, built from the leader's timestamps.
	if off, err := follower.OffsetForTimestamp(1005, 1<<40); err != nil || off != 15 {
		t.Fatalf("OffsetForTimestamp = %d, %v; want 15", off, err)
	}
	// And the copy survives a reopen (recovery validates it like any log).
	dir := follower.Dir()
	follower.Close()
	follower = open(t, dir, opts)
	if follower.HighWatermark() != 36 || follower.LogEndOffset() != 36 {
		t.Fatalf("reopened follower HW %d LEO %d", follower.HighWatermark(), follower.LogEndOffset())
	}
}

func TestFollowerAppendRejectsBadInput(t *testing.T) {
	leader := open(t, t.TempDir(), replicated(Options{}))
	defer leader.Close()
	follower := open(t, t.TempDir(), replicated(Options{}))
	defer follower.Close()
	mustAppend(t, leader, 10, plain(2, 40), plain(3, 40), plain(1, 40))
	bs := fetchAll(t, leader, 0)

	_, err := follower.Replica().AppendAsFollower(bs[1:])
	wantCode(t, err, ferr.LogOffsetOutOfRangeException)
	_, err = follower.Replica().AppendAsFollower([]record.Batch{bs[0], bs[2]})
	wantCode(t, err, ferr.CorruptRecordException)
	bad := slices.Clone(bs[0])
	bad[len(bad)-1] ^= 0xff
	_, err = follower.Replica().AppendAsFollower([]record.Batch{bad})
	wantCode(t, err, ferr.CorruptRecordException)
	_, err = follower.Replica().AppendAsFollower(nil)
	wantCode(t, err, ferr.CorruptRecordException)
	if follower.LogEndOffset() != 0 {
		t.Fatalf("a refused append moved the LEO to %d", follower.LogEndOffset())
	}
	if _, err := follower.Replica().AppendAsFollower(bs); err != nil {
		t.Fatal(err)
	}
	if follower.LogEndOffset() != 6 || follower.Replica().DurableLogEndOffset() != 6 || follower.HighWatermark() != 0 {
		t.Fatalf("LEO %d durable %d HW %d", follower.LogEndOffset(), follower.Replica().DurableLogEndOffset(), follower.HighWatermark())
	}
}

func TestPromotedFollowerDeduplicatesRetries(t *testing.T) {
	leader := open(t, t.TempDir(), replicated(Options{}))
	defer leader.Close()
	follower := open(t, t.TempDir(), replicated(Options{}))
	defer follower.Close()
	mustAppend(t, leader, 10, batch(5, 0, 2, 30))
	mustAppend(t, leader, 11, batch(5, 1, 2, 30))
	replicate(t, leader, follower)

	// The leader dies before acknowledging seq 1; the client retries it on the new leader.
	r, err := follower.Append([]record.Batch{batch(5, 1, 2, 30)}, 50)
	if err != nil || !r.Duplicate || r.FirstOffset != 2 || r.LastOffset != 3 || r.CommitTimestamp != 11 {
		t.Fatalf("retry on the promoted follower: %+v, %v", r, err)
	}
	_, err = follower.Append([]record.Batch{batch(5, 3, 1, 30)}, 50)
	wantCode(t, err, ferr.OutOfOrderSequenceException)
	if r := mustAppend(t, follower, 50, batch(5, 2, 1, 30)); r.Duplicate || r.FirstOffset != 4 {
		t.Fatalf("next sequence: %+v", r)
	}
}

func TestSetHighWatermark(t *testing.T) {
	single := open(t, t.TempDir(), Options{})
	defer single.Close()
	if _, err := single.Replica().SetHighWatermark(0); !errors.Is(err, errNotReplicated) {
		t.Fatalf("single-node SetHighWatermark: %v", err)
	}

	l := open(t, t.TempDir(), replicated(Options{}))
	defer l.Close()
	mustAppend(t, l, 10, plain(4, 40))
	mustAppend(t, l, 11, plain(4, 40))
	// Staged but not yet synced: the durable end stays behind, and the HW with it.
	if _, durable, err := l.AppendStaged([]record.Batch{plain(4, 40)}, 12); err != nil {
		t.Fatal(err)
	} else {
		if l.Replica().DurableLogEndOffset() != 8 {
			t.Fatalf("durable end %d before the sync, want 8", l.Replica().DurableLogEndOffset())
		}
		if hw, _ := l.Replica().SetHighWatermark(100); hw != 8 {
			t.Fatalf("HW %d, want clamped to the durable end 8", hw)
		}
		if err := durable(); err != nil {
			t.Fatal(err)
		}
		if l.HighWatermark() != 8 || l.Replica().DurableLogEndOffset() != 12 {
			t.Fatalf("the sync moved the HW to %d (durable %d)", l.HighWatermark(), l.Replica().DurableLogEndOffset())
		}
	}
	if hw, _ := l.Replica().SetHighWatermark(3); hw != 8 {
		t.Fatalf("HW went backwards to %d", hw)
	}
	if hw, _ := l.Replica().SetHighWatermark(10); hw != 8 {
		t.Fatalf("HW %d inside a batch, want rounded down to 8", hw)
	}
	if got := len(readAll(t, l, 0)); got != 2 {
		t.Fatalf("%d batches readable below the HW, want 2", got)
	}
	if hw, _ := l.Replica().SetHighWatermark(12); hw != 12 {
		t.Fatalf("HW %d, want 12", hw)
	}
}

func TestSingleNodeWritesNoReplicationFiles(t *testing.T) {
	dir := t.TempDir()
	l := open(t, dir, Options{SegmentBytes: 200})
	for i := 0; i < 6; i++ {
		mustAppend(t, l, 10, plain(2, 90))
		if l.HighWatermark() != l.LogEndOffset() {
			t.Fatalf("single-node HW %d != LEO %d", l.HighWatermark(), l.LogEndOffset())
		}
	}
	if err := l.Replica().TruncateTo(8); err != nil {
		t.Fatal(err)
	}
	l.Close()
	for _, name := range []string{hwFileName, epochFileName, truncateIntentName} {
		if _, err := os.Stat(filepath.Join(dir, name)); !os.IsNotExist(err) {
			t.Fatalf("%s exists in a single-node log (%v)", name, err)
		}
	}
}

func TestHighWatermarkCheckpointRestored(t *testing.T) {
	dir := t.TempDir()
	opts := replicated(Options{})
	l := open(t, dir, opts)
	for i := 0; i < 5; i++ {
		mustAppend(t, l, 10, plain(2, 40))
	}
	if _, err := l.Replica().SetHighWatermark(6); err != nil {
		t.Fatal(err)
	}
	l.Close()
	l = open(t, dir, opts)
	if l.HighWatermark() != 6 || l.LogEndOffset() != 10 {
		t.Fatalf("after Close: HW %d LEO %d, want 6 and 10", l.HighWatermark(), l.LogEndOffset())
	}
	if got := len(readAll(t, l, 0)); got != 3 {
		t.Fatalf("%d batches readable, want 3", got)
	}

	// A crash keeps the last checkpoint, not the last SetHighWatermark.
	if _, err := l.Replica().SetHighWatermark(8); err != nil {
		t.Fatal(err)
	}
	if err := l.Replica().CheckpointHighWatermark(); err != nil {
		t.Fatal(err)
	}
	if _, err := l.Replica().SetHighWatermark(10); err != nil {
		t.Fatal(err)
	}
	crash(l)
	l = open(t, dir, opts)
	if l.HighWatermark() != 8 {
		t.Fatalf("after a crash: HW %d, want the checkpointed 8", l.HighWatermark())
	}
	// A checkpoint beyond the recovered log end is clamped to it.
	if _, err := l.Replica().SetHighWatermark(10); err != nil {
		t.Fatal(err)
	}
	if err := l.Replica().CheckpointHighWatermark(); err != nil {
		t.Fatal(err)
	}
	crash(l)
	seg := fileName(dir, 0, logSuffix)
	st, _ := os.Stat(seg)
	if err := os.Truncate(seg, st.Size()-5); err != nil { // tear the last batch
		t.Fatal(err)
	}
	l = open(t, dir, opts)
	defer l.Close()
	if l.LogEndOffset() != 8 || l.HighWatermark() != 8 {
		t.Fatalf("torn tail: LEO %d HW %d, want 8 and 8", l.LogEndOffset(), l.HighWatermark())
	}
}

func TestTruncateTo(t *testing.T) {
	dir := t.TempDir()
	opts := replicated(Options{SegmentBytes: 300, IndexIntervalBytes: 64})
	l := open(t, dir, opts)
	if err := l.Replica().AssignEpoch(1, 0); err != nil {
		t.Fatal(err)
	}
	for i := int32(0); i < 10; i++ {
		if i == 6 {
			if err := l.Replica().AssignEpoch(2, l.LogEndOffset()); err != nil {
				t.Fatal(err)
			}
		}
		mustAppend(t, l, 100+int64(i), v2batch(t, 4, i, 2, 70))
	}
	if _, err := l.Replica().SetHighWatermark(20); err != nil {
		t.Fatal(err)
	}
	if len(l.segs) < 3 {
		t.Fatalf("want several segments, have %d", len(l.segs))
	}
	applied := int64(9)
	l.Replica().SetTruncateFloor(func() int64 { return applied })
	wantCode(t, l.Replica().TruncateTo(8), ferr.LogStorageException) // below the floor
	applied = 6
	want := logBytes(t, l, 9) // offset 9 is inside the batch [8, 9]: the log ends at 8
	if err := l.Replica().TruncateTo(9); err != nil {
		t.Fatal(err)
	}
	if l.LogEndOffset() != 8 || l.HighWatermark() != 8 {
		t.Fatalf("LEO %d HW %d, want 8 and 8", l.LogEndOffset(), l.HighWatermark())
	}
	if !bytes.Equal(logBytes(t, l, 8), want) || !bytes.Equal(logBytes(t, l, 100), want) {
		t.Fatal("truncated log differs from the old log's prefix")
	}
	if got := l.Replica().EpochEntries(); !slices.Equal(got, []EpochEntry{{1, 0}}) {
		t.Fatalf("epochs after truncation %v, want only epoch 1", got)
	}
	if off, err := l.OffsetForTimestamp(103, 1<<40); err != nil || off != 6 {
		t.Fatalf("OffsetForTimestamp after truncation = %d, %v", off, err)
	}
	// Writer state was rebuilt: seq 4 is no longer a duplicate, seq 3 still is.
	if r := mustAppend(t, l, 200, v2batch(t, 4, 3, 2, 70)); !r.Duplicate {
		t.Fatalf("seq 3 not a duplicate after truncation: %+v", r)
	}
	if r := mustAppend(t, l, 200, v2batch(t, 4, 4, 2, 70)); r.Duplicate || r.FirstOffset != 8 {
		t.Fatalf("seq 4 after truncation: %+v", r)
	}
	// The HW never moves up by itself, and the state survives a reopen.
	if l.HighWatermark() != 8 {
		t.Fatalf("HW %d after the append", l.HighWatermark())
	}
	l.Close()
	l = open(t, dir, opts)
	defer l.Close()
	if l.LogEndOffset() != 10 || l.HighWatermark() != 8 {
		t.Fatalf("reopened LEO %d HW %d", l.LogEndOffset(), l.HighWatermark())
	}
}

// TestTruncateToCrashMidway stops TruncateTo at each of its steps, as a crash would, and
// checks that the reopened log is the old one (crash before the intent is durable) or the
// truncated one (any later step).
func TestTruncateToCrashMidway(t *testing.T) {
	for step := 0; step <= 4; step++ {
		dir := t.TempDir()
		opts := replicated(Options{SegmentBytes: 300})
		l := open(t, dir, opts)
		for i := int32(0); i < 12; i++ {
			mustAppend(t, l, 100+int64(i), batch(4, i, 2, 70))
		}
		if _, err := l.Replica().SetHighWatermark(6); err != nil {
			t.Fatal(err)
		}
		old := logBytes(t, l, 100)
		truncated := logBytes(t, l, 6)
		crashErr := errors.New("simulated crash")
		l.replica.testHook = func(s int) error {
			if s == step {
				return crashErr
			}
			return nil
		}
		if err := l.Replica().TruncateTo(6); !errors.Is(err, crashErr) {
			t.Fatalf("step %d: TruncateTo = %v", step, err)
		}
		crash(l)
		l = open(t, dir, opts)
		want, wantLEO := truncated, int64(6)
		if step == 0 {
			want, wantLEO = old, 24
		}
		if l.LogEndOffset() != wantLEO || !bytes.Equal(logBytes(t, l, 100), want) {
			t.Fatalf("step %d: reopened log has LEO %d, want %d (bytes equal: %v)", step,
				l.LogEndOffset(), wantLEO, bytes.Equal(logBytes(t, l, 100), want))
		}
		if _, err := os.Stat(filepath.Join(dir, truncateIntentName)); !os.IsNotExist(err) {
			t.Fatalf("step %d: intent left behind", step)
		}
		// Writer state matches the log that survived.
		r := mustAppend(t, l, 300, batch(4, int32(wantLEO/2), 2, 70))
		if r.Duplicate || r.FirstOffset != wantLEO {
			t.Fatalf("step %d: next sequence after reopen: %+v", step, r)
		}
		l.Close()
	}
}

// TestEpochDivergence: A leads epoch 1 and appends more than B copies; B becomes leader in
// epoch 2 and appends; A rejoins as follower, asks B where epoch 1 ended, truncates, catches
// up, and both logs are byte-identical up to the HW.
func TestEpochDivergence(t *testing.T) {
	opts := replicated(Options{SegmentBytes: 400})
	a := open(t, t.TempDir(), opts)
	defer a.Close()
	b := open(t, t.TempDir(), opts)
	defer b.Close()

	if err := a.Replica().AssignEpoch(1, 0); err != nil {
		t.Fatal(err)
	}
	for i := int32(0); i < 4; i++ {
		mustAppend(t, a, 10+int64(i), v2batch(t, 1, i, 2, 60))
	}
	replicate(t, a, b) // both have [0, 8), HW 8
	for i := int32(4); i < 7; i++ {
		mustAppend(t, a, 10+int64(i), v2batch(t, 1, i, 2, 60)) // [8, 14) only on A
	}
	// B copies only the first of A's new batches, then A dies.
	if bs := fetchAll(t, a, b.LogEndOffset()); true {
		if _, err := b.Replica().AppendAsFollower(bs[:1]); err != nil {
			t.Fatal(err)
		}
	}
	// B becomes leader of epoch 2 and appends two batches from another writer.
	if err := b.Replica().AssignEpoch(2, b.LogEndOffset()); err != nil {
		t.Fatal(err)
	}
	for i := int32(0); i < 2; i++ {
		mustAppend(t, b, 50, v2batch(t, 2, i, 3, 60))
	}
	if got := b.Replica().EpochEntries(); !slices.Equal(got, []EpochEntry{{1, 0}, {2, 10}}) {
		t.Fatalf("B epochs %v", got)
	}

	// A rejoins as follower: it asks B about its latest epoch.
	e, end := b.Replica().EndOffsetForEpoch(a.Replica().LatestEpoch())
	if e != 1 || end != 10 {
		t.Fatalf("B.Replica().EndOffsetForEpoch(1) = %d, %d; want 1, 10", e, end)
	}
	off, final := a.Replica().TruncationOffset(e, end)
	if off != 10 || !final {
		t.Fatalf("A truncation offset %d final %v, want 10 true", off, final)
	}
	if err := a.Replica().TruncateTo(off); err != nil {
		t.Fatal(err)
	}
	replicate(t, b, a)
	if b.HighWatermark() != 16 || a.HighWatermark() != 16 {
		t.Fatalf("HW B %d A %d, want 16", b.HighWatermark(), a.HighWatermark())
	}
	if !bytes.Equal(logBytes(t, a, 16), logBytes(t, b, 16)) {
		t.Fatal("logs differ after A caught up")
	}
	if got := a.Replica().EpochEntries(); !slices.Equal(got, []EpochEntry{{1, 0}, {2, 10}}) {
		t.Fatalf("A epochs %v, want B's", got)
	}
	for _, bt := range readAll(t, a, 0) {
		wantEpoch := int32(1)
		if bt.BaseOffset() >= 10 {
			wantEpoch = 2
		}
		if bt.LeaderEpoch() != wantEpoch {
			t.Fatalf("batch at %d epoch %d, want %d", bt.BaseOffset(), bt.LeaderEpoch(), wantEpoch)
		}
	}
	// Old epochs are fenced.
	wantCode(t, b.Replica().AssignEpoch(1, b.LogEndOffset()), ferr.FencedLeaderEpochException)
}

func TestEndOffsetForEpochSemantics(t *testing.T) {
	c := epochCache{}
	if e, o := c.endOffsetFor(0, 50); e != NoEpoch || o != NoEpochOffset {
		t.Fatalf("empty cache: %d %d", e, o)
	}
	c.assign(2, 10)
	c.assign(4, 20)
	c.assign(7, 30)
	for _, tc := range []struct {
		ask     int32
		e       int32
		off     int64
		comment string
	}{
		{7, 7, 50, "latest epoch: the log end"},
		{4, 4, 30, "older epoch: where the next starts"},
		{5, 4, 30, "unknown epoch between two: the floor epoch, the next start"},
		{1, 1, 10, "older than every epoch: the first start"},
		{8, NoEpoch, NoEpochOffset, "newer than every epoch"},
		{NoEpoch, NoEpoch, NoEpochOffset, "undefined"},
	} {
		if e, o := c.endOffsetFor(tc.ask, 50); e != tc.e || o != tc.off {
			t.Errorf("%s: endOffsetFor(%d) = %d, %d; want %d, %d", tc.comment, tc.ask, e, o, tc.e, tc.off)
		}
	}
	// Assigning at an offset where later epochs started removes those (empty) epochs.
	c.assign(9, 20)
	if !slices.Equal(c.entries, []EpochEntry{{2, 10}, {9, 20}}) {
		t.Fatalf("after a conflicting assign: %v", c.entries)
	}
	back, err := decodeEpochs(encodeEpochs(c.entries))
	if err != nil || !slices.Equal(back, c.entries) {
		t.Fatalf("round trip: %v %v", back, err)
	}
	enc := encodeEpochs(c.entries)
	enc[len(enc)-1] ^= 1
	if _, err := decodeEpochs(enc); err == nil {
		t.Fatal("corrupt checkpoint accepted")
	}
}

func TestTruncationOffset(t *testing.T) {
	l := open(t, t.TempDir(), replicated(Options{}))
	defer l.Close()
	if err := l.Replica().AssignEpoch(1, 0); err != nil {
		t.Fatal(err)
	}
	for i := 0; i < 5; i++ {
		mustAppend(t, l, 10, plain(2, 30))
	}
	if err := l.Replica().AssignEpoch(3, 10); err != nil {
		t.Fatal(err)
	}
	for i := 0; i < 5; i++ {
		mustAppend(t, l, 10, plain(2, 30))
	}
	if _, err := l.Replica().SetHighWatermark(6); err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		epoch     int32
		end       int64
		off       int64
		final     bool
		situation string
	}{
		{3, 14, 14, true, "leader has our epoch, ended earlier"},
		{3, 40, 20, true, "leader has our epoch and more: keep everything"},
		{2, 15, 10, false, "leader's floor epoch 2 is unknown here: cut to our epoch 1's end, ask again"},
		{1, 8, 8, true, "leader's epoch 1 ended at 8"},
		{NoEpoch, NoEpochOffset, 6, true, "leader knows nothing: fall back to the HW"},
	} {
		if off, final := l.Replica().TruncationOffset(tc.epoch, tc.end); off != tc.off || final != tc.final {
			t.Errorf("%s: TruncationOffset(%d, %d) = %d, %v; want %d, %v", tc.situation, tc.epoch, tc.end, off, final, tc.off, tc.final)
		}
	}
}

// A new log opened with InitialOffset starts there (a follower joining a leader whose log no
// longer starts at 0); an existing log ignores it.
func TestInitialOffsetStartsANewLogThere(t *testing.T) {
	leaderDir, dir := t.TempDir(), t.TempDir()
	leader, err := Open(t.Context(), leaderDir, replicated(Options{InitialOffset: 40}))
	if err != nil {
		t.Fatal(err)
	}
	defer leader.Close()
	if leader.LogStartOffset() != 40 || leader.LogEndOffset() != 40 || leader.HighWatermark() != 40 {
		t.Fatalf("new log: start %d end %d hw %d, want 40", leader.LogStartOffset(), leader.LogEndOffset(), leader.HighWatermark())
	}
	for i := range 3 {
		if _, err := leader.Append([]record.Batch{v2batch(t, 1, int32(i), 5, 30)}, 1000); err != nil {
			t.Fatal(err)
		}
	}
	follower, err := Open(t.Context(), dir, replicated(Options{InitialOffset: 40}))
	if err != nil {
		t.Fatal(err)
	}
	replicate(t, leader, follower)
	if follower.LogEndOffset() != 55 || follower.HighWatermark() != 55 {
		t.Fatalf("follower: end %d hw %d, want 55", follower.LogEndOffset(), follower.HighWatermark())
	}
	if !bytes.Equal(logBytes(t, follower, 55), logBytes(t, leader, 55)) {
		t.Fatal("follower differs from the leader")
	}
	if err := follower.Close(); err != nil {
		t.Fatal(err)
	}
	follower, err = Open(t.Context(), dir, replicated(Options{InitialOffset: 7}))
	if err != nil {
		t.Fatal(err)
	}
	defer follower.Close()
	if follower.LogStartOffset() != 40 || follower.LogEndOffset() != 55 {
		t.Fatalf("reopened: start %d end %d, want 40 and 55", follower.LogStartOffset(), follower.LogEndOffset())
	}
}
