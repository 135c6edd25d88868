package history

import (
	"fmt"
	"math"
	"sort"
	"time"

	"github.com/anishathalye/porcupine"
)

// registerInput is a porcupine input: a write of v, or a read.
type registerInput struct {
	key   int64
	write bool
	v     int64
}

// registerModel is one register per key, initially Absent: a write sets it, a read returns it.
var registerModel = porcupine.Model{
	Partition: func(h []porcupine.Operation) [][]porcupine.Operation {
		byKey := map[int64][]porcupine.Operation{}
		var keys []int64
		for _, o := range h {
			k := o.Input.(registerInput).key
			if _, ok := byKey[k]; !ok {
				keys = append(keys, k)
			}
			byKey[k] = append(byKey[k], o)
		}
		sort.Slice(keys, func(i, j int) bool { return keys[i] < keys[j] })
		out := make([][]porcupine.Operation, len(keys))
		for i, k := range keys {
			out[i] = byKey[k]
		}
		return out
	},
	Init: func() any { return Absent },
	Step: func(state, input, output any) (bool, any) {
		in := input.(registerInput)
		if in.write {
			return true, in.v
		}
		return output.(int64) == state.(int64), state
	},
	DescribeOperation: func(input, output any) string {
		in := input.(registerInput)
		if in.write {
			return fmt.Sprintf("upsert(%d, %d)", in.key, in.v)
		}
		return fmt.Sprintf("lookup(%d) -> %d", in.key, output.(int64))
	},
}

// CheckRegisters checks that the upserts and lookups of ops are linearizable per key: there is
// one order of them, consistent with real time, in which every lookup returns the value of
// the last upsert before it. Upserts that are not OK may take effect at any time after their
// invocation, or never; lookups that are not OK are left out. A check that does not finish
// within timeout is reported as a problem too (it proves nothing).
func CheckRegisters(ops []Op, timeout time.Duration) Problems {
	var h []porcupine.Operation
	for _, o := range ops {
		switch {
		case o.Kind == Upsert:
			ret := o.end()
			if ret == math.MaxInt64 {
				ret = math.MaxInt64 - 1 // porcupine compares Return+1 in places; keep it finite
			}
			h = append(h, porcupine.Operation{ClientId: o.Proc, Input: registerInput{o.Key, true, o.Value}, Call: o.Invoke, Output: int64(0), Return: ret})
		case o.Kind == Lookup && o.Outcome == OK:
			h = append(h, porcupine.Operation{ClientId: o.Proc, Input: registerInput{key: o.Key}, Call: o.Invoke, Output: o.Value, Return: o.Return})
		}
	}
	var p Problems
	res, info := porcupine.CheckOperationsVerbose(registerModel, h, timeout)
	switch res {
	case porcupine.Illegal:
		p.addf("upserts and lookups are not linearizable per key: %s", describeIllegal(registerModel.Partition(h), info))
	case porcupine.Unknown:
		p.addf("linearizability check did not finish within %s (%d operations)", timeout, len(h))
	}
	return p
}

// describeIllegal names the first key whose history has no linearization (porcupine's
// partitions are in the order Partition returns them: by key) and the end of the longest
// partial linearization found for it: where the history could not be explained further.
func describeIllegal(parts [][]porcupine.Operation, info porcupine.LinearizationInfo) string {
	lins := info.PartialLinearizationsOperations()
	for i, part := range lins {
		if i >= len(parts) || len(part) == 0 {
			continue
		}
		longest := []porcupine.Operation(nil)
		for _, lin := range part {
			if len(lin) > len(longest) {
				longest = lin
			}
		}
		if len(longest) == len(parts[i]) {
			continue // this key is linearizable
		}
		key := parts[i][0].Input.(registerInput).key
		var tail []string
		for _, o := range longest[max(0, len(longest)-5):] {
			tail = append(tail, registerModel.DescribeOperation(o.Input, o.Output))
		}
		return fmt.Sprintf("key %d (%d operations, %d linearized), last of the longest partial linearization: %v", key, len(parts[i]), len(longest), tail)
	}
	return "no partial linearization"
}

// CheckChangelog checks a primary-key table's changelog (every record from the log start, in
// offset order per bucket; each key lives in one bucket) against the upserts of ops and the
// final lookups (key → value, Absent for none), read after the writes stopped: the changelog
// holds each acknowledged upsert's value once and nothing no client wrote; a key's values
// follow real time (an upsert acknowledged before another was invoked comes first); each -U
// carries the value the key held; and replaying it gives exactly the final lookups.
func CheckChangelog(ops []Op, changelog []Record, final map[int64]int64) Problems {
	var p Problems
	written := map[int64]Op{} // value → its upsert (values are unique across the history)
	for _, o := range ops {
		if o.Kind != Upsert {
			continue
		}
		if _, dup := written[o.Value]; dup {
			p.addf("value %d upserted twice (the workload must use unique values)", o.Value)
		}
		written[o.Value] = o
	}
	recs := append([]Record(nil), changelog...)
	sort.SliceStable(recs, func(i, j int) bool {
		if recs[i].Bucket != recs[j].Bucket {
			return recs[i].Bucket < recs[j].Bucket
		}
		return recs[i].Offset < recs[j].Offset
	})
	state := map[int64]int64{}
	latest := map[int64]Op{} // per key: the applied upsert of highest invocation time so far
	seen := map[int64]Record{}
	for _, r := range recs {
		cur, has := state[r.Key]
		switch r.ChangeType {
		case "+I", "+U", "+A":
			if r.ChangeType == "+I" && has {
				p.addf("bucket %d offset %d: +I of key %d, which holds %d", r.Bucket, r.Offset, r.Key, cur)
			}
			state[r.Key] = r.Value
			o, ok := written[r.Value]
			if !ok || o.Key != r.Key {
				p.addf("bucket %d offset %d: key %d = %d, which no client upserted", r.Bucket, r.Offset, r.Key, r.Value)
				continue
			}
			if prev, dup := seen[r.Value]; dup {
				p.addf("upsert of key %d = %d is in the changelog twice: offsets %d and %d", r.Key, r.Value, prev.Offset, r.Offset)
				continue
			}
			seen[r.Value] = r
			if l, ok := latest[r.Key]; ok && o.end() < l.Invoke {
				p.addf("key %d: %d was acknowledged before %d was invoked, yet comes after it in the changelog (offset %d)", r.Key, r.Value, l.Value, r.Offset)
			}
			if l, ok := latest[r.Key]; !ok || o.Invoke > l.Invoke {
				latest[r.Key] = o
			}
		case "-U", "-D":
			if !has || cur != r.Value {
				p.addf("bucket %d offset %d: %s of key %d = %d, but the key holds %v", r.Bucket, r.Offset, r.ChangeType, r.Key, r.Value, describeValue(cur, has))
			}
			if r.ChangeType == "-D" {
				delete(state, r.Key)
			}
		default:
			p.addf("bucket %d offset %d: unknown change type %q", r.Bucket, r.Offset, r.ChangeType)
		}
	}
	var lost []int64
	for v, o := range written {
		if _, ok := seen[v]; !ok && o.definite() {
			lost = append(lost, v)
		}
	}
	sort.Slice(lost, func(i, j int) bool { return lost[i] < lost[j] })
	for _, v := range lost {
		p.addf("acknowledged upsert of key %d = %d is not in the changelog (lost)", written[v].Key, v)
	}
	keys := map[int64]bool{}
	for k := range state {
		keys[k] = true
	}
	for k := range final {
		keys[k] = true
	}
	for k := range keys {
		got, okG := final[k]
		if !okG {
			got = Absent
		}
		want, okW := state[k]
		if !okW {
			want = Absent
		}
		if got != want {
			p.addf("key %d: the final lookup returns %v, replaying the changelog gives %v", k, describeValue(got, got != Absent), describeValue(want, want != Absent))
		}
	}
	return p
}

func describeValue(v int64, has bool) string {
	if !has || v == Absent {
		return "no row"
	}
	return fmt.Sprint(v)
}
