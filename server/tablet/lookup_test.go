package tablet_test

import (
	"context"
	"testing"

	"google.golang.org/protobuf/proto"

	"github.com/stromdb/strom/internal/metadata"
	"github.com/stromdb/strom/internal/row"
	"github.com/stromdb/strom/internal/wire"
	"github.com/stromdb/strom/proto/flusspb"
)

// LOOKUP with insert_if_not_exists answers a value for every key: existing rows as they are,
// missing keys with a new row of just the key columns; a plain lookup afterwards sees them.
func TestLookupInsertIfNotExists(t *testing.T) {
	coord, tablet := node(t)
	ctx := context.Background()
	d := metadata.TableDescriptor{
		Schema: metadata.Schema{Columns: []metadata.Column{
			{Name: "id", Type: metadata.DataType{Root: metadata.BigInt, NotNull: true}},
			{Name: "name", Type: metadata.DataType{Root: metadata.String}},
		}, PrimaryKey: []string{"id"}},
		BucketCount:      1,
		Properties:       map[string]string{},
		CustomProperties: map[string]string{},
	}
	d.Schema.AssignFieldIDs()
	path := &flusspb.PbTablePath{DatabaseName: proto.String("fluss"), TableName: proto.String("ins")}
	if err := coord.Call(ctx, wire.CreateTable, &flusspb.CreateTableRequest{TablePath: path, TableJson: d.JSON(), IgnoreIfExists: proto.Bool(false)}, &flusspb.CreateTableResponse{}); err != nil {
		t.Fatal(err)
	}
	var info flusspb.GetTableInfoResponse
	if err := coord.Call(ctx, wire.GetTableInfo, &flusspb.GetTableInfoRequest{TablePath: path}, &info); err != nil {
		t.Fatal(err)
	}
	keyTypes := []metadata.DataType{{Root: metadata.BigInt, NotNull: true}}
	key := func(id int64) []byte {
		k, err := row.EncodeKey(nil, keyTypes, []row.Datum{{I: id}})
		if err != nil {
			t.Fatal(err)
		}
		return k
	}
	lookup := func(insert bool, ids ...int64) []*flusspb.PbValue {
		t.Helper()
		req := &flusspb.LookupRequest{TableId: info.TableId, BucketsReq: []*flusspb.PbLookupReqForBucket{{BucketId: proto.Int32(0)}}}
		if insert {
			req.InsertIfNotExists = proto.Bool(true)
			req.Acks = proto.Int32(-1)
			req.TimeoutMs = proto.Int32(30000)
		}
		for _, id := range ids {
			req.BucketsReq[0].Keys = append(req.BucketsReq[0].Keys, key(id))
		}
		var resp flusspb.LookupResponse
		if err := tablet.Call(ctx, wire.Lookup, req, &resp); err != nil {
			t.Fatal(err)
		}
		b := resp.BucketsResp[0]
		if b.ErrorCode != nil {
			t.Fatalf("lookup error %d: %s", b.GetErrorCode(), b.GetErrorMessage())
		}
		return b.Values
	}
	if v := lookup(false, 1); v[0].Values != nil {
		t.Fatal("key 1 exists before the insert")
	}
	vals := lookup(true, 1, 2)
	for i, v := range vals {
		if v.Values == nil {
			t.Fatalf("key %d: no value after insert_if_not_exists", i+1)
		}
		_, rb, err := row.SplitValue(v.Values)
		if err != nil {
			t.Fatal(err)
		}
		d, err := row.DecodeCompactedRow([]metadata.DataType{keyTypes[0], {Root: metadata.String}}, rb, nil)
		if err != nil {
			t.Fatal(err)
		}
		if d[0].I != int64(i+1) || !d[1].Null {
			t.Fatalf("key %d: row %+v", i+1, d)
		}
	}
	if v := lookup(false, 1, 2, 3); v[0].Values == nil || v[1].Values == nil || v[2].Values != nil {
		t.Fatal("a plain lookup does not see the inserted rows (or sees a key never inserted)")
	}
}
