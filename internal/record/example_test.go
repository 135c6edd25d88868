package record_test

import (
	"fmt"

	"github.com/stromdb/strom/internal/record"
)

// Build a COMPACTED changelog batch in place, as the server does for a PUT_KV, and read it back.
func ExampleBeginV0Batch() {
	buf, start := record.BeginV0Batch(nil)
	buf = record.AppendRowLogRecord(buf, record.UpdateBefore, []byte{0x00, 0x01})
	buf = record.AppendRowLogRecord(buf, record.UpdateAfter, []byte{0x00, 0x02})
	h := record.V0Header{SchemaID: 1, WriterID: 7, BatchSequence: 0, RecordCount: 2}
	if err := record.FinishV0Batch(buf[start:], h); err != nil {
		panic(err)
	}
	b := record.Batch(buf[start:])
	fmt.Println(b.Validate(), b.LastOffsetDelta(), b.AppendOnly())
	r := b.RowLogRecords()
	for {
		ct, row, ok := r.Next()
		if !ok {
			break
		}
		fmt.Printf("%s %x\n", ct.ShortString(), row)
	}
	fmt.Println(r.Err())
	// Output:
	// <nil> 1 false
	// -U 0001
	// +U 0002
	// <nil>
}

// Read a PUT_KV bucket's records: one upsert and one delete.
func ExampleParseKvBatch() {
	payload := record.AppendKvBatch(nil, record.KvHeader{SchemaID: 1, WriterID: -1, BatchSequence: -1},
		record.KvRecord{Key: []byte{1}, Row: []byte{0x00, 0x01}},
		record.KvRecord{Key: []byte{2}}) // no row: delete
	b, err := record.ParseKvBatch(payload)
	if err != nil {
		panic(err)
	}
	it := b.Records()
	for {
		key, row, ok := it.Next()
		if !ok {
			break
		}
		if row == nil {
			fmt.Printf("delete %x\n", key)
			continue
		}
		fmt.Printf("upsert %x = %x\n", key, row)
	}
	// Output:
	// upsert 01 = 0001
	// delete 02
}
