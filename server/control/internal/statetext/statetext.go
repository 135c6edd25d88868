// Package statetext is the text form of buckets and bucket states that the control plane's
// data-driven tests (testdata/ beside each concern) read and print, one state a line:
//
//	1/-/0 r=1,2,3 l=1 isr=1,2,3 le=4 be=7 ce=9
//
// is bucket 0 of table 1 (no partition; 1/5/0 is bucket 0 of partition 5), replicas 1, 2
// and 3, leader 1 (l=- for no leader), ISR 1, 2 and 3, leader epoch 4, bucket epoch 7 and
// coordinator epoch 9. Omitted epochs are 0, and Format omits them when they are 0.
package statetext

import (
	"cmp"
	"fmt"
	"maps"
	"slices"
	"strconv"
	"strings"

	"github.com/stromdb/strom/server/cluster"
)

// ParseIDs reads a comma-separated list of server ids ("" is none).
func ParseIDs(s string) ([]int32, error) {
	if s == "" {
		return nil, nil
	}
	var out []int32
	for _, f := range strings.Split(s, ",") {
		v, err := strconv.ParseInt(strings.TrimSpace(f), 10, 32)
		if err != nil {
			return nil, fmt.Errorf("server id %q: %w", f, err)
		}
		out = append(out, int32(v))
	}
	return out, nil
}

// FormatIDs is the text of a list of server ids.
func FormatIDs(ids []int32) string {
	parts := make([]string, len(ids))
	for i, id := range ids {
		parts[i] = strconv.Itoa(int(id))
	}
	return strings.Join(parts, ",")
}

// ParseBucket reads table/partition/bucket, partition "-" for none.
func ParseBucket(s string) (cluster.Bucket, error) {
	parts := strings.Split(s, "/")
	if len(parts) != 3 {
		return cluster.Bucket{}, fmt.Errorf("bucket %q: want table/partition/bucket", s)
	}
	t, err1 := strconv.ParseInt(parts[0], 10, 64)
	n, err2 := strconv.ParseInt(parts[2], 10, 32)
	p := cluster.NoPartition
	var err3 error
	if parts[1] != "-" {
		p, err3 = strconv.ParseInt(parts[1], 10, 64)
	}
	if err := cmp.Or(err1, err2, err3); err != nil {
		return cluster.Bucket{}, fmt.Errorf("bucket %q: %w", s, err)
	}
	return cluster.Bucket{TableID: t, PartitionID: p, Bucket: int32(n)}, nil
}

// FormatBucket is the text of a bucket.
func FormatBucket(b cluster.Bucket) string {
	p := "-"
	if b.PartitionID != cluster.NoPartition {
		p = strconv.FormatInt(b.PartitionID, 10)
	}
	return fmt.Sprintf("%d/%s/%d", b.TableID, p, b.Bucket)
}

// ParseState reads one state line.
func ParseState(line string) (cluster.Bucket, cluster.BucketState, error) {
	fields := strings.Fields(line)
	if len(fields) == 0 {
		return cluster.Bucket{}, cluster.BucketState{}, fmt.Errorf("empty state line")
	}
	b, err := ParseBucket(fields[0])
	if err != nil {
		return cluster.Bucket{}, cluster.BucketState{}, err
	}
	st := cluster.BucketState{Leader: cluster.NoLeader}
	for _, f := range fields[1:] {
		k, v, ok := strings.Cut(f, "=")
		if !ok {
			return b, st, fmt.Errorf("field %q: want key=value", f)
		}
		var err error
		switch k {
		case "r":
			st.Replicas, err = ParseIDs(v)
		case "isr":
			st.ISR, err = ParseIDs(v)
		case "l":
			if v != "-" {
				var l int64
				l, err = strconv.ParseInt(v, 10, 32)
				st.Leader = int32(l)
			}
		case "le", "be":
			var e int64
			e, err = strconv.ParseInt(v, 10, 32)
			if k == "le" {
				st.LeaderEpoch = int32(e)
			} else {
				st.BucketEpoch = int32(e)
			}
		case "ce":
			st.CoordinatorEpoch, err = strconv.ParseInt(v, 10, 64)
		default:
			err = fmt.Errorf("unknown field")
		}
		if err != nil {
			return b, st, fmt.Errorf("field %q: %w", f, err)
		}
	}
	return b, st, nil
}

// FormatState is the text of one state.
func FormatState(b cluster.Bucket, st cluster.BucketState) string {
	l := "-"
	if st.Leader != cluster.NoLeader {
		l = strconv.Itoa(int(st.Leader))
	}
	s := fmt.Sprintf("%s r=%s l=%s isr=%s", FormatBucket(b), FormatIDs(st.Replicas), l, FormatIDs(st.ISR))
	if st.LeaderEpoch != 0 {
		s += fmt.Sprintf(" le=%d", st.LeaderEpoch)
	}
	if st.BucketEpoch != 0 {
		s += fmt.Sprintf(" be=%d", st.BucketEpoch)
	}
	if st.CoordinatorEpoch != 0 {
		s += fmt.Sprintf(" ce=%d", st.CoordinatorEpoch)
	}
	return s
}

// ParseStates reads one state a line (blank lines and lines starting with # are skipped).
func ParseStates(text string) (map[cluster.Bucket]cluster.BucketState, error) {
	out := map[cluster.Bucket]cluster.BucketState{}
	for _, line := range strings.Split(text, "\n") {
		line = strings.TrimSpace(line)
		if line == "" || strings.HasPrefix(line, "#") {
			continue
		}
		b, st, err := ParseState(line)
		if err != nil {
			return nil, err
		}
		out[b] = st
	}
	return out, nil
}

// Compare orders buckets by table, partition and bucket.
func Compare(a, b cluster.Bucket) int {
	return cmp.Or(cmp.Compare(a.TableID, b.TableID), cmp.Compare(a.PartitionID, b.PartitionID), cmp.Compare(a.Bucket, b.Bucket))
}

// Buckets returns the buckets of states, sorted.
func Buckets[V any](states map[cluster.Bucket]V) []cluster.Bucket {
	return slices.SortedFunc(maps.Keys(states), Compare)
}

// FormatStates is the text of states, one a line in bucket order.
func FormatStates(states map[cluster.Bucket]cluster.BucketState) string {
	var sb strings.Builder
	for _, b := range Buckets(states) {
		sb.WriteString(FormatState(b, states[b]))
		sb.WriteByte('\n')
	}
	return sb.String()
}

// Live returns the liveness test of a list of live server ids.
func Live(ids []int32) func(int32) bool {
	return func(id int32) bool { return slices.Contains(ids, id) }
}
