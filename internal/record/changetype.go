package record

import "fmt"

// ChangeType is the kind of change a log record carries. Its byte value is what the
// change-type vector of ARROW batches and the row records of INDEXED/COMPACTED batches hold.
type ChangeType byte

// Change types. Any other byte value is corrupt.
const (
	AppendOnly   ChangeType = 0 // +A: a row of a log table
	Insert       ChangeType = 1 // +I: a new primary key
	UpdateBefore ChangeType = 2 // -U: the old row of an update
	UpdateAfter  ChangeType = 3 // +U: the new row of an update
	Delete       ChangeType = 4 // -D: the deleted row
)

var changeTypeShort = [...]string{"+A", "+I", "-U", "+U", "-D"}

var changeTypeNames = [...]string{"APPEND_ONLY", "INSERT", "UPDATE_BEFORE", "UPDATE_AFTER", "DELETE"}

// Valid reports whether c is one of the five defined change types.
func (c ChangeType) Valid() bool { return c <= Delete }

// ShortString returns the two-character form used in changelogs: +A, +I, -U, +U or -D.
func (c ChangeType) ShortString() string {
	if c.Valid() {
		return changeTypeShort[c]
	}
	return fmt.Sprintf("?%d", byte(c))
}

// String returns the Fluss name of c, e.g. UPDATE_AFTER.
func (c ChangeType) String() string {
	if c.Valid() {
		return changeTypeNames[c]
	}
	return fmt.Sprintf("ChangeType(%d)", byte(c))
}

// ParseChangeType converts a stored byte into a ChangeType, rejecting unknown values.
func ParseChangeType(v byte) (ChangeType, error) {
	if c := ChangeType(v); c.Valid() {
		return c, nil
	}
	return 0, fmt.Errorf("%w: unknown change type %d", ErrBadRecord, v)
}

// ValidateChangeTypes checks that every byte of a change-type vector is a defined ChangeType.
func ValidateChangeTypes(vector []byte) error {
	for i, v := range vector {
		if !ChangeType(v).Valid() {
			return fmt.Errorf("%w: unknown change type %d at row %d", ErrBadRecord, v, i)
		}
	}
	return nil
}

// ArrowBody splits the records section of an ARROW batch into its change-type vector (nil
// for an append-only batch, otherwise RecordCount bytes) and the Arrow IPC message that
// follows. An empty batch (RecordCount 0) has neither. The change types are not checked; see
// ValidateChangeTypes.
func (b Batch) ArrowBody() (changeTypes, ipc []byte, err error) {
	recs := b.Records()
	if b.AppendOnly() {
		return nil, recs, nil
	}
	n := int(b.RecordCount())
	if n < 0 || n > len(recs) {
		return nil, nil, fmt.Errorf("%w: change-type vector of %d rows in %d bytes",
			ErrBadLength, n, len(recs))
	}
	return recs[:n:n], recs[n:], nil
}
