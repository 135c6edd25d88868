package logstore

import (
	"math"

	"github.com/stromdb/strom/internal/ferr"
	"github.com/stromdb/strom/internal/record"
)

// retainedBatches is how many of a writer's latest batches are remembered for duplicate
// detection (Fluss WriterStateEntry.NUM_BATCHES_TO_RETAIN; clients keep at most 5 in flight).
const retainedBatches = 5

// batchMeta is what duplicate detection remembers of one appended batch.
type batchMeta struct {
	seq         int32
	firstOffset int64
	lastOffset  int64
	ts          int64
}

// writerEntry is the state of one writer id in one bucket: its latest batches, oldest first.
type writerEntry struct {
	id      int64
	batches [retainedBatches]batchMeta
	n       int
	lastTs  int64 // commit timestamp of the writer's latest batch
}

func (e *writerEntry) lastSeq() int32 {
	if e == nil || e.n == 0 {
		return record.NoBatchSequence
	}
	return e.batches[e.n-1].seq
}

func (e *writerEntry) find(seq int32) (batchMeta, bool) {
	if e == nil {
		return batchMeta{}, false
	}
	for i := 0; i < e.n; i++ {
		if e.batches[i].seq == seq {
			return e.batches[i], true
		}
	}
	return batchMeta{}, false
}

func (e *writerEntry) add(m batchMeta) {
	if e.n == retainedBatches {
		copy(e.batches[:], e.batches[1:])
		e.n--
	}
	e.batches[e.n] = m
	e.n++
	e.lastTs = m.ts
}

// inSequence is Fluss's leader-side rule: the next sequence follows the last one, wrapping
// from MaxInt32 to 0; a writer without state (last = -1) must therefore start at 0. (Java also
// accepts any sequence when the batch's commit timestamp is older than the expiration, but on
// the leader the timestamp was just set to "now", so that branch never applies here.)
func inSequence(last, next int32) bool {
	return int64(next) == int64(last)+1 || (next == 0 && last == math.MaxInt32)
}

// follows reports whether a batch of sequence seq may be the writer's next one: Fluss's rule
// (inSequence), or for a record-sequenced writer (Kafka producers, record.RecordSequencedWriter)
// the latest batch's sequence plus its record count, which its offsets give; a writer without
// state starts at 0 under both rules.
func (e *writerEntry) follows(seq int32) bool {
	if !record.IsRecordSequenced(e.id) || e.n == 0 {
		return inSequence(e.lastSeq(), seq)
	}
	last := e.batches[e.n-1]
	return seq == record.NextRecordSequence(last.seq, last.lastOffset-last.firstOffset+1)
}

// writerState maps writer ids to their entries. It is owned by the Log writer (Log.mu).
type writerState map[int64]*writerEntry

// pendingWriters accumulates the updates of one append before it is committed. A request
// usually carries one writer, so a small slice beats a map.
type pendingWriters []writerEntry

func (p *pendingWriters) get(ws writerState, id int64) *writerEntry {
	for i := range *p {
		if (*p)[i].id == id {
			return &(*p)[i]
		}
	}
	e := writerEntry{id: id, lastTs: -1}
	if cur := ws[id]; cur != nil {
		e = *cur
	}
	*p = append(*p, e)
	return &(*p)[len(*p)-1]
}

// check validates the writer sequences of batches whose offsets and timestamp have been
// assigned. It returns the original metadata of a duplicate (the whole append is then a
// duplicate, as in Fluss), or OUT_OF_ORDER_SEQUENCE_EXCEPTION.
func (ws writerState) check(batches []record.Batch, p *pendingWriters) (dup batchMeta, isDup bool, err error) {
	for _, b := range batches {
		id := b.WriterID()
		if id == record.NoWriterID {
			continue
		}
		seq := b.BatchSequence()
		if m, ok := ws[id].find(seq); ok {
			return m, true, nil
		}
		e := p.get(ws, id)
		if !e.follows(seq) {
			return batchMeta{}, false, ferr.New(ferr.OutOfOrderSequenceException,
				"out of order batch sequence for writer %d at offset %d: %d (incoming batch seq.), %d (current batch seq.)",
				id, b.LastOffset(), seq, e.lastSeq())
		}
		e.add(batchMeta{seq: seq, firstOffset: b.BaseOffset(), lastOffset: b.LastOffset(), ts: b.CommitTimestamp()})
	}
	return batchMeta{}, false, nil
}

// commit applies validated pending updates.
func (ws writerState) commit(p pendingWriters) {
	for i := range p {
		e := p[i]
		if cur := ws[e.id]; cur != nil {
			*cur = e
		} else {
			ws[e.id] = &e
		}
	}
}

// observe records a batch read back from the log during recovery, without validation (the
// log is the truth, like a follower's append).
func (ws writerState) observe(b record.Batch) {
	id := b.WriterID()
	if id == record.NoWriterID {
		return
	}
	e := ws[id]
	if e == nil {
		e = &writerEntry{id: id, lastTs: -1}
		ws[id] = e
	}
	e.add(batchMeta{seq: b.BatchSequence(), firstOffset: b.BaseOffset(), lastOffset: b.LastOffset(), ts: b.CommitTimestamp()})
}

// expire drops writers whose last batch is older than expirationMs at nowMs.
func (ws writerState) expire(nowMs, expirationMs int64) int {
	n := 0
	for id, e := range ws {
		if nowMs-e.lastTs > expirationMs {
			delete(ws, id)
			n++
		}
	}
	return n
}
