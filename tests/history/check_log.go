package history

import (
	"fmt"
	"sort"
)

// Problems lists what a check found; empty means the history passed.
type Problems []string

func (p *Problems) addf(format string, args ...any) { *p = append(*p, fmt.Sprintf(format, args...)) }

// Err is nil when there are no problems, else an error naming the first few.
func (p Problems) Err() error {
	if len(p) == 0 {
		return nil
	}
	shown := p
	if len(shown) > 10 {
		shown = shown[:10]
	}
	return fmt.Errorf("history: %d problems, first: %v", len(p), shown)
}

// CheckAppends checks the appends of ops (ids unique across the history) against the final
// log of their table, read from the log start to its end: every acknowledged append is there
// exactly once; no two records share a bucket offset; every record was written by some
// append; and within a bucket offsets follow real time — an append acknowledged before
// another was invoked has the lower offset. Appends that are not OK may be present or not.
func CheckAppends(ops []Op, log []Record) Problems {
	var p Problems
	byID := map[int64]Op{}
	for _, o := range ops {
		if o.Kind != Append {
			continue
		}
		if _, dup := byID[o.Key]; dup {
			p.addf("append id %d invoked twice (the workload must use unique ids)", o.Key)
		}
		byID[o.Key] = o
	}
	seen := map[int64]Record{}
	type bo struct {
		b   int32
		off int64
	}
	atOffset := map[bo]Record{}
	perBucket := map[int32][]Record{}
	for _, r := range log {
		if prev, ok := atOffset[bo{r.Bucket, r.Offset}]; ok {
			p.addf("bucket %d offset %d holds two records: ids %d and %d", r.Bucket, r.Offset, prev.Key, r.Key)
		}
		atOffset[bo{r.Bucket, r.Offset}] = r
		if prev, ok := seen[r.Key]; ok {
			p.addf("append id %d is in the log twice: bucket %d offset %d and bucket %d offset %d", r.Key, prev.Bucket, prev.Offset, r.Bucket, r.Offset)
			continue
		}
		seen[r.Key] = r
		if _, ok := byID[r.Key]; !ok {
			p.addf("bucket %d offset %d holds id %d, which no client appended", r.Bucket, r.Offset, r.Key)
			continue
		}
		perBucket[r.Bucket] = append(perBucket[r.Bucket], r)
	}
	var lost []int64
	for id, o := range byID {
		if o.definite() {
			if _, ok := seen[id]; !ok {
				lost = append(lost, id)
			}
		}
	}
	sort.Slice(lost, func(i, j int) bool { return lost[i] < lost[j] })
	for _, id := range lost {
		p.addf("acknowledged append id %d is not in the log (lost)", id)
	}
	// Real-time order: walking a bucket in offset order, a record whose append returned before
	// the invocation of an append at a lower offset was reordered.
	buckets := make([]int32, 0, len(perBucket))
	for b := range perBucket {
		buckets = append(buckets, b)
	}
	sort.Slice(buckets, func(i, j int) bool { return buckets[i] < buckets[j] })
	for _, b := range buckets {
		recs := perBucket[b]
		sort.Slice(recs, func(i, j int) bool { return recs[i].Offset < recs[j].Offset })
		var latest Op // the op of highest invocation time at the offsets walked so far
		var latestOff int64
		for i, r := range recs {
			o := byID[r.Key]
			if i > 0 && o.end() < latest.Invoke {
				p.addf("bucket %d: id %d (offset %d) was acknowledged before id %d (offset %d) was invoked, yet comes after it (reordered)",
					b, o.Key, r.Offset, latest.Key, latestOff)
			}
			if i == 0 || o.Invoke > latest.Invoke {
				latest, latestOff = o, r.Offset
			}
		}
	}
	return p
}
