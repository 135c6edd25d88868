package fluss

import (
	"context"
	"encoding/binary"
	"testing"
)

// FuzzDecodeValueBatch feeds arbitrary LIMIT_SCAN payloads of a primary-key table to the
// value-batch decoder: it must return rows or an error, never panic.
func FuzzDecodeValueBatch(f *testing.F) {
	info := newTableInfo(TablePath{"d", "t"}, 1, 1, TableDescriptor{
		Schema:      NewSchema([]Column{NewColumn("id", Int()), NewColumn("s", String())}, "id"),
		BucketCount: 1,
	}.internal(), 0, 0)
	tbl, err := newTable(nil, info)
	if err != nil {
		f.Fatal(err)
	}
	sc, err := tbl.NewScan().Limit(10).CreateBucketBatchScanner(NewTableBucket(1, 0))
	if err != nil {
		f.Fatal(err)
	}
	// One record: value = schema id 1, compacted row (id=1, s="a").
	value := []byte{1, 0, 0x00, 0x01, 0x01, 'a'}
	batch := binary.LittleEndian.AppendUint32(nil, 0)
	batch = append(batch, 0)
	batch = binary.LittleEndian.AppendUint32(batch, 1)
	batch = binary.LittleEndian.AppendUint32(batch, uint32(len(value)))
	batch = append(batch, value...)
	binary.LittleEndian.PutUint32(batch, uint32(len(batch)-4))
	f.Add(batch)
	f.Add([]byte{})
	f.Add([]byte{0, 0, 0, 0, 0, 0xff, 0xff, 0xff, 0x7f})
	f.Fuzz(func(t *testing.T, data []byte) {
		rows, err := sc.decodeValues(context.Background(), data)
		if err == nil {
			for _, r := range rows {
				_ = fromDatums(tbl.cols, r)
			}
		}
	})
}
