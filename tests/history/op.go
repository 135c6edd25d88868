package history

import (
	"bufio"
	"encoding/json"
	"fmt"
	"io"
	"math"
)

// Kind is what an operation did.
type Kind string

const (
	// Append adds a row whose id is Op.Key to a log table.
	Append Kind = "append"
	// Upsert writes Op.Value for key Op.Key of a primary-key table.
	Upsert Kind = "upsert"
	// Lookup reads key Op.Key of a primary-key table; Op.Value is what it returned
	// (Absent when the key had no row).
	Lookup Kind = "lookup"
)

// Outcome is what the client learned of an operation.
type Outcome string

const (
	// OK: acknowledged (a write) or answered (a lookup).
	OK Outcome = "ok"
	// Fail: the client reported an error. For a write the effect is still unknown (a timed-out
	// write may be committed later), so the checker treats it as Unknown; a failed lookup
	// observed nothing and is ignored.
	Fail Outcome = "fail"
	// Unknown: no answer before the test stopped waiting.
	Unknown Outcome = "unknown"
)

// Absent is the Value of a lookup that found no row.
const Absent int64 = math.MinInt64

// Op is one operation of a history. Times are nanoseconds on one clock shared by every
// process of the test (CLOCK_REALTIME on one machine); Return is meaningless unless the
// outcome is OK.
type Op struct {
	Proc    int     `json:"p"` // the client process and worker that ran it
	Kind    Kind    `json:"k"`
	Key     int64   `json:"key"`
	Value   int64   `json:"v,omitempty"`
	Invoke  int64   `json:"i"`
	Return  int64   `json:"r,omitempty"`
	Outcome Outcome `json:"o"`
	Err     string  `json:"err,omitempty"`
}

// definite reports whether the operation's effect is known to have happened.
func (o Op) definite() bool { return o.Outcome == OK }

// end is the operation's return time for ordering: +inf unless it is OK.
func (o Op) end() int64 {
	if o.Outcome == OK {
		return o.Return
	}
	return math.MaxInt64
}

// Record is one row of a final log read: the record at Offset of Bucket, whose row has id or
// key Key and, for a changelog, Value and ChangeType (+I, -U, +U, -D).
type Record struct {
	Bucket     int32  `json:"b"`
	Offset     int64  `json:"off"`
	Key        int64  `json:"key"`
	Value      int64  `json:"v,omitempty"`
	ChangeType string `json:"ct,omitempty"`
}

// WriteOps writes ops as JSON lines.
func WriteOps(w io.Writer, ops []Op) error {
	enc := json.NewEncoder(w)
	for _, o := range ops {
		if err := enc.Encode(o); err != nil {
			return fmt.Errorf("history: encode: %w", err)
		}
	}
	return nil
}

// ReadOps reads JSON lines written by WriteOps (or by a process appending one Op per line).
// A truncated last line, as a killed process leaves, is ignored.
func ReadOps(r io.Reader) ([]Op, error) {
	var ops []Op
	sc := bufio.NewScanner(r)
	sc.Buffer(make([]byte, 64<<10), 1<<20)
	var bad error // a malformed line, fatal unless it is the last
	for sc.Scan() {
		if bad != nil {
			return nil, bad
		}
		var o Op
		if err := json.Unmarshal(sc.Bytes(), &o); err != nil {
			bad = fmt.Errorf("history: line %d: %w", len(ops)+1, err)
			continue
		}
		ops = append(ops, o)
	}
	if err := sc.Err(); err != nil {
		return nil, fmt.Errorf("history: read: %w", err)
	}
	return ops, nil
}
