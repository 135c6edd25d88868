package tablet_test

import (
	"context"
	"encoding/binary"
	"fmt"
	"sync/atomic"
	"testing"
	"time"

	"google.golang.org/protobuf/proto"

	"github.com/stromdb/strom/internal/metadata"
	"github.com/stromdb/strom/internal/record"
	"github.com/stromdb/strom/internal/row"
	"github.com/stromdb/strom/internal/wire"
	"github.com/stromdb/strom/proto/flusspb"
	"github.com/stromdb/strom/server/tablet"
)

// A PUT_KV large enough to stage its buckets concurrently answers every bucket in request
// order with its own log end offset, and each bucket holds its rows afterwards; a bucket
// named twice in one request is staged in request order (the second batch merges against the
// first, and its sequence follows the first's).
func TestPutKvStagesBucketsConcurrently(t *testing.T) {
	coord, conn := node(t)
	ctx := context.Background()
	const buckets = 4
	d := metadata.TableDescriptor{
		Schema: metadata.Schema{Columns: []metadata.Column{
			{Name: "id", Type: metadata.DataType{Root: metadata.BigInt, NotNull: true}},
			{Name: "name", Type: metadata.DataType{Root: metadata.String}},
		}, PrimaryKey: []string{"id"}},
		BucketCount:      buckets,
		Properties:       map[string]string{},
		CustomProperties: map[string]string{},
	}
	d.Schema.AssignFieldIDs()
	path := &flusspb.PbTablePath{DatabaseName: proto.String("fluss"), TableName: proto.String("multi")}
	if err := coord.Call(ctx, wire.CreateTable, &flusspb.CreateTableRequest{TablePath: path, TableJson: d.JSON(), IgnoreIfExists: proto.Bool(false)}, &flusspb.CreateTableResponse{}); err != nil {
		t.Fatal(err)
	}
	var info flusspb.GetTableInfoResponse
	if err := coord.Call(ctx, wire.GetTableInfo, &flusspb.GetTableInfoRequest{TablePath: path}, &info); err != nil {
		t.Fatal(err)
	}
	// batch returns a KV batch of n rows id -> "<tag>-<id>" for ids first, first+1, ...
	batch := func(writer int64, seq int32, first int64, n int, tag string) []byte {
		recs := make([]record.KvRecord, n)
		for i := range recs {
			id := first + int64(i)
			val, err := row.AppendCompactedRow(nil, pkTypes, []row.Datum{{I: id}, {B: fmt.Appendf(nil, "%s-%d", tag, id)}})
			if err != nil {
				t.Fatal(err)
			}
			recs[i] = record.KvRecord{Key: pkKey(t, id), Row: val}
		}
		return record.AppendKvBatch(nil, record.KvHeader{SchemaID: 1, WriterID: writer, BatchSequence: seq}, recs...)
	}
	put := func(reqs []*flusspb.PbPutKvReqForBucket) []*flusspb.PbPutKvRespForBucket {
		t.Helper()
		if !tablet.StageConcurrently(reqs) && len(reqs) == buckets {
			t.Fatal("the request is too small to be staged concurrently; the test needs more rows")
		}
		var resp flusspb.PutKvResponse
		req := &flusspb.PutKvRequest{Acks: proto.Int32(-1), TableId: info.TableId, TimeoutMs: proto.Int32(10000), BucketsReq: reqs}
		if err := conn.Call(ctx, wire.PutKv, req, &resp); err != nil {
			t.Fatal(err)
		}
		if len(resp.BucketsResp) != len(reqs) {
			t.Fatalf("%d answers for %d buckets", len(resp.BucketsResp), len(reqs))
		}
		for i, b := range resp.BucketsResp {
			if b.ErrorCode != nil {
				t.Fatalf("bucket %d: error %d %s", b.GetBucketId(), b.GetErrorCode(), b.GetErrorMessage())
			}
			if b.GetBucketId() != reqs[i].GetBucketId() {
				t.Fatalf("answer %d is for bucket %d, want %d", i, b.GetBucketId(), reqs[i].GetBucketId())
			}
		}
		return resp.BucketsResp
	}
	lookup := func(b int32, id int64) string {
		t.Helper()
		req := &flusspb.LookupRequest{TableId: info.TableId, BucketsReq: []*flusspb.PbLookupReqForBucket{{BucketId: proto.Int32(b), Keys: [][]byte{pkKey(t, id)}}}}
		var resp flusspb.LookupResponse
		if err := conn.Call(ctx, wire.Lookup, req, &resp); err != nil {
			t.Fatal(err)
		}
		v := resp.BucketsResp[0].Values[0].Values
		if v == nil {
			return ""
		}
		_, rb, err := row.SplitValue(v)
		if err != nil {
			t.Fatal(err)
		}
		r, err := row.DecodeCompactedRow(pkTypes, rb, nil)
		if err != nil {
			t.Fatal(err)
		}
		return string(r[1].B)
	}
	waitServed(t, conn, info.GetTableId(), buckets)

	// Bucket b holds ids b*1e6 + i; each bucket's batch is ~25 KB, 100 KB in all.
	const rows = 1500
	var reqs []*flusspb.PbPutKvReqForBucket
	for b := int32(buckets - 1); b >= 0; b-- { // not in bucket order: answers follow the request
		reqs = append(reqs, &flusspb.PbPutKvReqForBucket{BucketId: proto.Int32(b), Records: batch(int64(100+b), 0, int64(b)*1e6, rows, "a")})
	}
	for _, a := range put(reqs) {
		if a.GetLogEndOffset() != rows {
			t.Fatalf("bucket %d: log end %d, want %d", a.GetBucketId(), a.GetLogEndOffset(), rows)
		}
	}
	for b := int32(0); b < buckets; b++ {
		for _, i := range []int64{0, rows - 1} {
			if got, want := lookup(b, int64(b)*1e6+i), fmt.Sprintf("a-%d", int64(b)*1e6+i); got != want {
				t.Fatalf("bucket %d id %d: %q, want %q", b, int64(b)*1e6+i, got, want)
			}
		}
	}

	// Bucket 0 twice (one writer, sequences 1 then 2, overlapping keys), bucket 1 once.
	reqs = []*flusspb.PbPutKvReqForBucket{
		{BucketId: proto.Int32(0), Records: batch(100, 1, 0, rows, "b")},
		{BucketId: proto.Int32(1), Records: batch(101, 1, 1e6, rows, "b")},
		{BucketId: proto.Int32(0), Records: batch(100, 2, rows/2, rows, "c")},
	}
	if tablet.StageConcurrently(reqs) {
		t.Fatal("a request naming bucket 0 twice is staged concurrently")
	}
	ans := put(reqs)
	// Bucket 0: the first batch updates all 1500 rows (-U/+U), the second updates 750 and
	// inserts 750.
	if got, want := ans[0].GetLogEndOffset(), int64(rows+2*rows); got != want {
		t.Fatalf("bucket 0 first answer: log end %d, want %d", got, want)
	}
	if got, want := ans[2].GetLogEndOffset(), int64(rows+2*rows+2*rows/2+rows/2); got != want {
		t.Fatalf("bucket 0 second answer: log end %d, want %d", got, want)
	}
	for id, want := range map[int64]string{0: "b-0", rows/2 - 1: fmt.Sprint("b-", rows/2-1), rows / 2: fmt.Sprint("c-", rows/2), rows + 10: fmt.Sprint("c-", rows+10)} {
		if got := lookup(0, id); got != want {
			t.Fatalf("bucket 0 id %d: %q, want %q", id, got, want)
		}
	}
}

// waitServed waits until every bucket of table answers a LOOKUP (a new table's buckets are
// opened asynchronously).
func waitServed(t *testing.T, conn *wire.ClientConn, table int64, buckets int32) {
	t.Helper()
	for b := int32(0); b < buckets; b++ {
		for try := 0; ; try++ {
			req := &flusspb.LookupRequest{TableId: proto.Int64(table), BucketsReq: []*flusspb.PbLookupReqForBucket{{BucketId: proto.Int32(b), Keys: [][]byte{pkKey(t, -1)}}}}
			var resp flusspb.LookupResponse
			err := conn.Call(context.Background(), wire.Lookup, req, &resp)
			if err == nil && resp.BucketsResp[0].ErrorCode == nil {
				break
			}
			if try > 500 {
				t.Fatalf("bucket %d not served: %v %v", b, err, resp.BucketsResp)
			}
			time.Sleep(10 * time.Millisecond)
		}
	}
}

func TestForEachConcurrentlyCallsEachIndexOnce(t *testing.T) {
	for _, tc := range []struct{ n, workers int }{{0, 2}, {1, 4}, {5, 1}, {7, 3}, {64, 2}} {
		calls := make([]atomic.Int32, tc.n)
		tablet.ForEachConcurrently(tc.n, tc.workers, func(i int) { calls[i].Add(1) })
		for i := range calls {
			if c := calls[i].Load(); c != 1 {
				t.Fatalf("n=%d workers=%d: index %d called %d times", tc.n, tc.workers, i, c)
			}
		}
	}
}

// An auto-increment column (docs/primary-keys.md §2.9) gets its ids from the metadata
// store's counter of the table, in ranges of table.auto-increment.cache-size per bucket
// leader: unique over the table's buckets, assigned on insert, kept on update, and stored,
// so LOOKUP and LIMIT_SCAN return them. A write that would set the column is refused.
func TestPutKvAutoIncrement(t *testing.T) {
	coord, conn := node(t)
	ctx := context.Background()
	types := []metadata.DataType{{Root: metadata.BigInt, NotNull: true}, {Root: metadata.String}, {Root: metadata.BigInt}}
	d := metadata.TableDescriptor{
		Schema: metadata.Schema{Columns: []metadata.Column{
			{Name: "id", Type: types[0]}, {Name: "name", Type: types[1]}, {Name: "uid", Type: types[2]},
		}, PrimaryKey: []string{"id"}, AutoIncrement: []string{"uid"}},
		BucketCount:      2,
		Properties:       map[string]string{metadata.PropAutoIncrementCacheSize: "2"},
		CustomProperties: map[string]string{},
	}
	d.Schema.AssignFieldIDs()
	path := &flusspb.PbTablePath{DatabaseName: proto.String("fluss"), TableName: proto.String("autoinc")}
	if err := coord.Call(ctx, wire.CreateTable, &flusspb.CreateTableRequest{TablePath: path, TableJson: d.JSON(), IgnoreIfExists: proto.Bool(false)}, &flusspb.CreateTableResponse{}); err != nil {
		t.Fatal(err)
	}
	var info flusspb.GetTableInfoResponse
	if err := coord.Call(ctx, wire.GetTableInfo, &flusspb.GetTableInfoRequest{TablePath: path}, &info); err != nil {
		t.Fatal(err)
	}
	waitServed(t, conn, info.GetTableId(), 2)
	put := func(bucket int32, targets []int32, seq int32, names map[int64]string) *flusspb.PbPutKvRespForBucket {
		t.Helper()
		var recs []record.KvRecord
		for id := int64(0); id < 100; id++ {
			name, ok := names[id]
			if !ok {
				continue
			}
			val, err := row.AppendCompactedRow(nil, types, []row.Datum{{I: id}, {B: []byte(name)}, {I: 777}})
			if err != nil {
				t.Fatal(err)
			}
			recs = append(recs, record.KvRecord{Key: pkKey(t, id), Row: val})
		}
		req := &flusspb.PutKvRequest{Acks: proto.Int32(-1), TableId: info.TableId, TimeoutMs: proto.Int32(10000), TargetColumns: targets,
			BucketsReq: []*flusspb.PbPutKvReqForBucket{{BucketId: proto.Int32(bucket),
				Records: record.AppendKvBatch(nil, record.KvHeader{SchemaID: 1, WriterID: int64(10 + bucket), BatchSequence: seq}, recs...)}}}
		var resp flusspb.PutKvResponse
		if err := conn.Call(ctx, wire.PutKv, req, &resp); err != nil {
			t.Fatal(err)
		}
		return resp.BucketsResp[0]
	}
	ok := func(a *flusspb.PbPutKvRespForBucket) {
		t.Helper()
		if a.ErrorCode != nil {
			t.Fatalf("bucket %d: error %d %s", a.GetBucketId(), a.GetErrorCode(), a.GetErrorMessage())
		}
	}
	decode := func(v []byte) string {
		t.Helper()
		_, rb, err := row.SplitValue(v)
		if err != nil {
			t.Fatal(err)
		}
		r, err := row.DecodeCompactedRow(types, rb, nil)
		if err != nil {
			t.Fatal(err)
		}
		return fmt.Sprintf("%d,%s,%d", r[0].I, r[1].B, r[2].I)
	}
	lookup := func(bucket int32, id int64) string {
		t.Helper()
		req := &flusspb.LookupRequest{TableId: info.TableId, BucketsReq: []*flusspb.PbLookupReqForBucket{{BucketId: proto.Int32(bucket), Keys: [][]byte{pkKey(t, id)}}}}
		var resp flusspb.LookupResponse
		if err := conn.Call(ctx, wire.Lookup, req, &resp); err != nil {
			t.Fatal(err)
		}
		return decode(resp.BucketsResp[0].Values[0].Values)
	}

	idAndName := []int32{0, 1}
	ok(put(0, idAndName, 0, map[int64]string{1: "a", 2: "b", 3: "c"})) // ids 1, 2, then 3 of [3,4]
	ok(put(1, idAndName, 0, map[int64]string{4: "d"}))                 // 5 of [5,6]
	ok(put(0, idAndName, 1, map[int64]string{2: "b2", 5: "e"}))        // 2 kept, 5 takes 4
	for _, c := range []struct {
		bucket int32
		id     int64
		want   string
	}{{0, 1, "1,a,1"}, {0, 2, "2,b2,2"}, {0, 3, "3,c,3"}, {1, 4, "4,d,5"}, {0, 5, "5,e,4"}} {
		if got := lookup(c.bucket, c.id); got != c.want {
			t.Fatalf("lookup %d: %q, want %q", c.id, got, c.want)
		}
	}

	for _, targets := range [][]int32{nil, {0, 1, 2}} {
		if a := put(1, targets, 1, map[int64]string{6: "f"}); a.GetErrorCode() != 35 {
			t.Fatalf("targets %v: error %d %s, want INVALID_TARGET_COLUMN (35)", targets, a.GetErrorCode(), a.GetErrorMessage())
		}
	}

	var scan flusspb.LimitScanResponse
	if err := conn.Call(ctx, wire.LimitScan, &flusspb.LimitScanRequest{TableId: info.TableId, BucketId: proto.Int32(0), Limit: proto.Int32(10)}, &scan); err != nil {
		t.Fatal(err)
	}
	recs := scan.GetRecords()
	if len(recs) < 9 {
		t.Fatalf("limit scan: %d bytes", len(recs))
	}
	var got []string
	for p := 9; p < len(recs); {
		n := int(binary.LittleEndian.Uint32(recs[p:]))
		got = append(got, decode(recs[p+4:p+4+n]))
		p += 4 + n
	}
	if want := []string{"1,a,1", "2,b2,2", "3,c,3", "5,e,4"}; fmt.Sprint(got) != fmt.Sprint(want) {
		t.Fatalf("limit scan: %v, want %v", got, want)
	}
}
