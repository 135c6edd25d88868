package tablet_test

import (
	"context"
	"strings"
	"testing"

	"google.golang.org/protobuf/proto"

	"github.com/stromdb/strom/internal/ferr"
	"github.com/stromdb/strom/internal/metadata"
	"github.com/stromdb/strom/internal/wire"
	"github.com/stromdb/strom/proto/flusspb"
)

// TestListOffsetsRefusesUnknownOffsetType: an offset type outside 0..3 gets the error Java
// sends (UNKNOWN_SERVER_ERROR naming the invalid type), never an offset.
func TestListOffsetsRefusesUnknownOffsetType(t *testing.T) {
	coord, tablet := node(t)
	id := createLogTable(t, coord, "offset_types")
	for _, typ := range []int32{-1, 4, 99} {
		var resp flusspb.ListOffsetsResponse
		req := &flusspb.ListOffsetsRequest{FollowerServerId: proto.Int32(-1), OffsetType: proto.Int32(typ), TableId: proto.Int64(id), BucketId: []int32{0}}
		if err := tablet.Call(context.Background(), wire.ListOffsets, req, &resp); err != nil {
			t.Fatal(err)
		}
		b := resp.BucketsResp[0]
		if ferr.Code(b.GetErrorCode()) != ferr.UnknownServerError || b.Offset != nil ||
			!strings.Contains(b.GetErrorMessage(), "Invalid list offset type") {
			t.Errorf("offset type %d: code %d offset %v message %q", typ, b.GetErrorCode(), b.Offset, b.GetErrorMessage())
		}
	}
}

// TestPrefixLookupRefusesEmptyPrefix: an empty prefix would match the whole bucket.
func TestPrefixLookupRefusesEmptyPrefix(t *testing.T) {
	coord, tablet := node(t)
	ctx := context.Background()
	d := metadata.TableDescriptor{
		Schema: metadata.Schema{Columns: []metadata.Column{
			{Name: "a", Type: metadata.DataType{Root: metadata.Int}},
			{Name: "b", Type: metadata.DataType{Root: metadata.Int}},
		}, PrimaryKey: []string{"a", "b"}},
		BucketKeys:       []string{"a"},
		BucketCount:      1,
		Properties:       map[string]string{},
		CustomProperties: map[string]string{},
	}
	d.Schema.AssignFieldIDs()
	path := &flusspb.PbTablePath{DatabaseName: proto.String("fluss"), TableName: proto.String("prefix")}
	if err := coord.Call(ctx, wire.CreateTable, &flusspb.CreateTableRequest{TablePath: path, TableJson: d.JSON(), IgnoreIfExists: proto.Bool(false)}, &flusspb.CreateTableResponse{}); err != nil {
		t.Fatal(err)
	}
	var info flusspb.GetTableInfoResponse
	if err := coord.Call(ctx, wire.GetTableInfo, &flusspb.GetTableInfoRequest{TablePath: path}, &info); err != nil {
		t.Fatal(err)
	}
	lookup := func(keys ...[]byte) *flusspb.PbPrefixLookupRespForBucket {
		var resp flusspb.PrefixLookupResponse
		req := &flusspb.PrefixLookupRequest{TableId: proto.Int64(info.GetTableId()),
			BucketsReq: []*flusspb.PbPrefixLookupReqForBucket{{BucketId: proto.Int32(0), Keys: keys}}}
		if err := tablet.Call(ctx, wire.PrefixLookup, req, &resp); err != nil {
			t.Fatal(err)
		}
		return resp.BucketsResp[0]
	}
	if r := lookup([]byte{1}); r.GetErrorCode() != 0 || len(r.ValueLists) != 1 {
		t.Fatalf("non-empty prefix: code %d, %d lists", r.GetErrorCode(), len(r.ValueLists))
	}
	for _, keys := range [][][]byte{{{}}, {{1}, {}}} {
		if r := lookup(keys...); ferr.Code(r.GetErrorCode()) != ferr.UnknownServerError || len(r.ValueLists) != 0 {
			t.Errorf("keys %v: code %d, %d lists", keys, r.GetErrorCode(), len(r.ValueLists))
		}
	}
}

// TestKeyEncodingNeedsVersion1: a lake table of kv format version 2 whose bucket key is not
// its primary key keeps compacted keys, which a version-0 client cannot produce; PUT_KV,
// LOOKUP and PREFIX_LOOKUP v0 are refused per bucket with UNSUPPORTED_VERSION, as Java's
// ReplicaManager does, while v1 is served. On a table without a lake format v0 is served.
func TestKeyEncodingNeedsVersion1(t *testing.T) {
	coord, tablet := node(t)
	ctx := context.Background()
	create := func(name string, props map[string]string) int64 {
		t.Helper()
		d := metadata.TableDescriptor{
			Schema: metadata.Schema{Columns: []metadata.Column{
				{Name: "a", Type: metadata.DataType{Root: metadata.Int, NotNull: true}},
				{Name: "b", Type: metadata.DataType{Root: metadata.Int, NotNull: true}},
			}, PrimaryKey: []string{"a", "b"}},
			BucketKeys:       []string{"a"},
			BucketCount:      1,
			Properties:       props,
			CustomProperties: map[string]string{},
		}
		d.Schema.AssignFieldIDs()
		path := &flusspb.PbTablePath{DatabaseName: proto.String("fluss"), TableName: proto.String(name)}
		if err := coord.Call(ctx, wire.CreateTable, &flusspb.CreateTableRequest{TablePath: path, TableJson: d.JSON(), IgnoreIfExists: proto.Bool(false)}, &flusspb.CreateTableResponse{}); err != nil {
			t.Fatal(err)
		}
		var info flusspb.GetTableInfoResponse
		if err := coord.Call(ctx, wire.GetTableInfo, &flusspb.GetTableInfoRequest{TablePath: path}, &info); err != nil {
			t.Fatal(err)
		}
		return info.GetTableId()
	}
	lake := create("lake_kv2", map[string]string{metadata.PropDatalakeFormat: "iceberg", metadata.PropKvFormatVersion: "2"})
	plain := create("plain_kv2", map[string]string{metadata.PropKvFormatVersion: "2"})
	key := []byte{1, 2}
	// Each call returns the error code of the request's single bucket.
	calls := map[string]func(table int64, version int16) int32{
		"PUT_KV": func(table int64, version int16) int32 {
			body, _ := proto.Marshal(&flusspb.PutKvRequest{Acks: proto.Int32(-1), TableId: proto.Int64(table), TimeoutMs: proto.Int32(30000),
				BucketsReq: []*flusspb.PbPutKvReqForBucket{{BucketId: proto.Int32(0), Records: []byte{0}}}})
			var resp flusspb.PutKvResponse
			call(t, tablet, wire.PutKv, version, body, &resp)
			return resp.BucketsResp[0].GetErrorCode()
		},
		"LOOKUP": func(table int64, version int16) int32 {
			body, _ := proto.Marshal(&flusspb.LookupRequest{TableId: proto.Int64(table),
				BucketsReq: []*flusspb.PbLookupReqForBucket{{BucketId: proto.Int32(0), Keys: [][]byte{key}}}})
			var resp flusspb.LookupResponse
			call(t, tablet, wire.Lookup, version, body, &resp)
			return resp.BucketsResp[0].GetErrorCode()
		},
		"PREFIX_LOOKUP": func(table int64, version int16) int32 {
			body, _ := proto.Marshal(&flusspb.PrefixLookupRequest{TableId: proto.Int64(table),
				BucketsReq: []*flusspb.PbPrefixLookupReqForBucket{{BucketId: proto.Int32(0), Keys: [][]byte{key[:1]}}}})
			var resp flusspb.PrefixLookupResponse
			call(t, tablet, wire.PrefixLookup, version, body, &resp)
			return resp.BucketsResp[0].GetErrorCode()
		},
	}
	for name, do := range calls {
		if code := do(lake, 0); ferr.Code(code) != ferr.UnsupportedVersion {
			t.Errorf("%s v0 on the lake table: code %d, want UNSUPPORTED_VERSION", name, code)
		}
		if code := do(lake, 1); ferr.Code(code) == ferr.UnsupportedVersion {
			t.Errorf("%s v1 on the lake table was refused", name)
		}
		if code := do(plain, 0); ferr.Code(code) == ferr.UnsupportedVersion {
			t.Errorf("%s v0 on a table without a lake format was refused", name)
		}
	}
}

// call sends body as version v of key and decodes the answer into resp.
func call(t *testing.T, c *wire.ClientConn, key wire.APIKey, v int16, body []byte, resp proto.Message) {
	t.Helper()
	out, err := c.CallRaw(context.Background(), key, v, body)
	if err != nil {
		t.Fatalf("%s v%d: %v", key, v, err)
	}
	if err := proto.Unmarshal(out, resp); err != nil {
		t.Fatal(err)
	}
}
