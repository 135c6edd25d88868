package coordinator

import (
	"context"
	"testing"
	"time"

	"google.golang.org/protobuf/proto"

	"github.com/stromdb/strom/internal/ferr"
	"github.com/stromdb/strom/proto/flusspb"
)

func TestProducerOffsetsRegisterOnlyWhenAbsentOrExpired(t *testing.T) {
	ctx := context.Background()
	store := newMemStore()
	clk := &clock{now: time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)}
	s := &producerOffsets{store: store, tables: newTestCatalog(t, newMemStore()), now: clk.Now, ttl: time.Hour}
	register := func(offset int64) int32 {
		t.Helper()
		resp, err := s.handleRegisterProducerOffsets(ctx, request(t, &flusspb.RegisterProducerOffsetsRequest{ProducerId: proto.String("sink"),
			TableOffsets: []*flusspb.PbProducerTableOffsets{{TableId: proto.Int64(7), BucketOffsets: []*flusspb.PbBucketOffset{
				{BucketId: proto.Int32(0), LogEndOffset: proto.Int64(offset)}}}}}))
		if err != nil {
			t.Fatal(err)
		}
		return resp.(*flusspb.RegisterProducerOffsetsResponse).GetResult()
	}
	get := func() *flusspb.GetProducerOffsetsResponse {
		t.Helper()
		resp, err := s.handleGetProducerOffsets(ctx, request(t, &flusspb.GetProducerOffsetsRequest{ProducerId: proto.String("sink")}))
		if err != nil {
			t.Fatal(err)
		}
		return resp.(*flusspb.GetProducerOffsetsResponse)
	}

	if got := register(10); got != producerOffsetsCreated {
		t.Fatalf("first registration: result %d, want CREATED", got)
	}
	if got := register(20); got != producerOffsetsAlreadyExists {
		t.Fatalf("registration over a live snapshot: result %d, want ALREADY_EXISTS", got)
	}
	resp := get()
	if off := resp.GetTableOffsets()[0].GetBucketOffsets()[0].GetLogEndOffset(); off != 10 {
		t.Fatalf("offset %d, want the first registration's 10", off)
	}
	if want := clk.Now().Add(time.Hour).UnixMilli(); resp.GetExpirationTime() != want {
		t.Fatalf("expiration %d, want now + ttl %d", resp.GetExpirationTime(), want)
	}

	clk.Add(time.Hour) // expired: reads as absent, and may be registered anew
	if got := get(); got.ProducerId != nil {
		t.Fatalf("an expired snapshot is answered: %v", got)
	}
	if keys := store.keys("producers/"); len(keys) != 0 {
		t.Fatalf("the expired snapshot is still stored: %v", keys)
	}
	if got := register(30); got != producerOffsetsCreated {
		t.Fatalf("registration after expiry: result %d, want CREATED", got)
	}

	if _, err := s.handleDeleteProducerOffsets(ctx, request(t, &flusspb.DeleteProducerOffsetsRequest{ProducerId: proto.String("sink")})); err != nil {
		t.Fatal(err)
	}
	if got := get(); got.ProducerId != nil {
		t.Fatalf("a deleted snapshot is answered: %v", got)
	}
	_, err := s.handleGetProducerOffsets(ctx, request(t, &flusspb.GetProducerOffsetsRequest{ProducerId: proto.String("bad/id")}))
	wantCode(t, err, ferr.InvalidProducerIdException, "GET_PRODUCER_OFFSETS of an invalid id")
}
