package fluss

import (
	"cmp"
	"context"
	"slices"
	"time"

	"google.golang.org/protobuf/proto"

	"github.com/stromdb/strom/internal/wire"
	"github.com/stromdb/strom/proto/flusspb"
)

// ProducerOffsets is what a named producer registered (REGISTER_PRODUCER_OFFSETS): the log
// end offset it saw in each bucket, kept until ExpirationTime. A producer that writes with
// exactly-once semantics across restarts (a Flink sink recovering from a checkpoint) records
// them and reads them back to know what it already wrote.
type ProducerOffsets struct {
	ProducerID     string
	ExpirationTime int64 // epoch ms
	Offsets        map[TableBucket]int64
}

// RegisterProducerOffsets records offsets under producerID for ttl (0: the cluster's
// coordinator.producer-offsets.ttl). Registration creates or replaces an expired record
// only: created is false when a live record already exists, which is left unchanged.
func (a *Admin) RegisterProducerOffsets(ctx context.Context, producerID string, offsets map[TableBucket]int64, ttl time.Duration) (created bool, err error) {
	req := &flusspb.RegisterProducerOffsetsRequest{ProducerId: proto.String(producerID)}
	if ttl > 0 {
		req.TtlMs = proto.Int64(ttl.Milliseconds())
	}
	byTable := map[int64]*flusspb.PbProducerTableOffsets{}
	tbs := make([]TableBucket, 0, len(offsets))
	for tb := range offsets {
		tbs = append(tbs, tb)
	}
	// A stable order, so that equal registrations are equal requests.
	slices.SortFunc(tbs, func(x, y TableBucket) int {
		switch {
		case x.TableID != y.TableID:
			return cmp.Compare(x.TableID, y.TableID)
		case x.PartitionID != y.PartitionID:
			return cmp.Compare(x.PartitionID, y.PartitionID)
		}
		return cmp.Compare(x.Bucket, y.Bucket)
	})
	for _, tb := range tbs {
		t := byTable[tb.TableID]
		if t == nil {
			t = &flusspb.PbProducerTableOffsets{TableId: proto.Int64(tb.TableID)}
			byTable[tb.TableID] = t
			req.TableOffsets = append(req.TableOffsets, t)
		}
		t.BucketOffsets = append(t.BucketOffsets, &flusspb.PbBucketOffset{
			PartitionId: tb.partitionIDField(), BucketId: proto.Int32(tb.Bucket), LogEndOffset: proto.Int64(offsets[tb]),
		})
	}
	var resp flusspb.RegisterProducerOffsetsResponse
	if err := a.conn.callCoordinator(ctx, wire.RegisterProducerOffsets, req, &resp); err != nil {
		return false, err
	}
	return resp.GetResult() == 0, nil
}

// GetProducerOffsets returns the live record of producerID, or ok false when there is none
// (never registered, deleted or expired).
func (a *Admin) GetProducerOffsets(ctx context.Context, producerID string) (po ProducerOffsets, ok bool, err error) {
	var resp flusspb.GetProducerOffsetsResponse
	if err := a.conn.callCoordinator(ctx, wire.GetProducerOffsets, &flusspb.GetProducerOffsetsRequest{ProducerId: proto.String(producerID)}, &resp); err != nil {
		return ProducerOffsets{}, false, err
	}
	if resp.ProducerId == nil {
		return ProducerOffsets{}, false, nil
	}
	po = ProducerOffsets{ProducerID: resp.GetProducerId(), ExpirationTime: resp.GetExpirationTime(), Offsets: map[TableBucket]int64{}}
	for _, t := range resp.TableOffsets {
		for _, b := range t.BucketOffsets {
			tb := NewTableBucket(t.GetTableId(), b.GetBucketId())
			if b.PartitionId != nil {
				tb.PartitionID = b.GetPartitionId()
			}
			po.Offsets[tb] = b.GetLogEndOffset()
		}
	}
	return po, true, nil
}

// DeleteProducerOffsets deletes the record of producerID (nothing happens if there is none).
func (a *Admin) DeleteProducerOffsets(ctx context.Context, producerID string) error {
	return a.conn.callCoordinator(ctx, wire.DeleteProducerOffsets, &flusspb.DeleteProducerOffsetsRequest{ProducerId: proto.String(producerID)}, &flusspb.DeleteProducerOffsetsResponse{})
}
