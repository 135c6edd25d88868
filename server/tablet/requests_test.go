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
