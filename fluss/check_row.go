package fluss

// CheckRow converts r as AppendWriter.Append and UpsertWriter.Upsert convert a row, and
// writes nothing: it returns the error such a write would return for the row itself — a
// wrong number of values, a Go value that does not fit its column's type, NULL in a NOT NULL
// column, a DECIMAL beyond its precision or scale. It asks no server, so what only the
// server knows (a missing partition, authorization) is not checked. Loaders use it for a dry
// run, or to check a whole input before its first write.
func (t *Table) CheckRow(r Row) error {
	_, err := toDatums(t.cols, r, nil)
	return err
}
