package coordinator

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"time"

	"google.golang.org/protobuf/proto"

	"github.com/stromdb/strom/internal/ferr"
	"github.com/stromdb/strom/internal/metadata"
	"github.com/stromdb/strom/internal/wire"
	"github.com/stromdb/strom/proto/flusspb"
	"github.com/stromdb/strom/server/auth"
	"github.com/stromdb/strom/server/cluster"
	"github.com/stromdb/strom/server/meta"
)

// Producer offsets (REGISTER/GET/DELETE_PRODUCER_OFFSETS): a named producer (e.g. a Flink sink
// recovering from a checkpoint) records the log end offsets it saw per bucket, with an
// expiration time. Registration is "create if absent or expired": a live snapshot is never
// overwritten (result ALREADY_EXISTS). Expired snapshots read as absent and are deleted when
// next touched.

// DefaultProducerOffsetsTTL is coordinator.producer-offsets.ttl's default.
const DefaultProducerOffsetsTTL = 24 * time.Hour

// Register results (RegisterProducerOffsetsResponse.result).
const (
	producerOffsetsCreated       int32 = 0
	producerOffsetsAlreadyExists int32 = 1
)

func producerKey(id string) string { return "producers/" + id }

// producerRecord is the stored snapshot; field names are part of the on-disk format.
type producerRecord struct {
	ExpirationMs int64               `json:"expiration_ms"`
	Offsets      []producerBucketRec `json:"offsets"`
}

type producerBucketRec struct {
	TableID     int64 `json:"table_id"`
	PartitionID int64 `json:"partition_id"` // -1 for non-partitioned tables
	Bucket      int32 `json:"bucket"`
	Offset      int64 `json:"offset"`
}

func (r producerRecord) tableIDs() []int64 {
	var ids []int64
	for _, o := range r.Offsets {
		if !slices.Contains(ids, o.TableID) {
			ids = append(ids, o.TableID)
		}
	}
	return ids
}

func validateProducerID(id string) error {
	if reason := metadata.DetectInvalidName(id); reason != "" {
		return ferr.New(ferr.InvalidProducerIdException, "Invalid producer ID '%s': %s", id, reason)
	}
	return nil
}

// readProducer returns the live snapshot of id; an expired one is deleted and reads as absent.
func (c *Coordinator) readProducer(ctx context.Context, id string) (producerRecord, bool, error) {
	data, err := c.store.Get(ctx, producerKey(id))
	if errors.Is(err, meta.ErrNotFound) {
		return producerRecord{}, false, nil
	}
	if err != nil {
		return producerRecord{}, false, err
	}
	var rec producerRecord
	if err := json.Unmarshal(data, &rec); err != nil {
		return producerRecord{}, false, fmt.Errorf("producer offsets %s: corrupt record: %w", id, err)
	}
	if rec.ExpirationMs <= c.nowMs() {
		if _, err := c.store.Txn(ctx, nil, []meta.Op{meta.Delete(producerKey(id))}); err != nil {
			return producerRecord{}, false, err
		}
		return producerRecord{}, false, nil
	}
	return rec, true, nil
}

func init() {
	registerAdmin(wire.RegisterProducerOffsets, 0, 0, (*Coordinator).handleRegisterProducerOffsets)
}

func (c *Coordinator) handleRegisterProducerOffsets(ctx context.Context, req *wire.Request) (proto.Message, error) {
	var r flusspb.RegisterProducerOffsetsRequest
	if err := req.Decode(&r); err != nil {
		return nil, err
	}
	for _, to := range r.GetTableOffsets() {
		if err := c.authorizeTableID(req, auth.OpWrite, to.GetTableId()); err != nil {
			return nil, err
		}
	}
	if err := validateProducerID(r.GetProducerId()); err != nil {
		return nil, err
	}
	ttl := c.opts.ProducerOffsetsTTL
	if ttl <= 0 {
		ttl = DefaultProducerOffsetsTTL
	}
	if r.TtlMs != nil {
		ttl = time.Duration(r.GetTtlMs()) * time.Millisecond
	}
	rec := producerRecord{ExpirationMs: c.nowMs() + ttl.Milliseconds()}
	for _, to := range r.GetTableOffsets() {
		for _, bo := range to.GetBucketOffsets() {
			pid := cluster.NoPartition
			if bo.PartitionId != nil {
				pid = bo.GetPartitionId()
			}
			rec.Offsets = append(rec.Offsets, producerBucketRec{TableID: to.GetTableId(), PartitionID: pid, Bucket: bo.GetBucketId(), Offset: bo.GetLogEndOffset()})
		}
	}
	data, err := json.Marshal(rec)
	if err != nil {
		return nil, err
	}
	c.producerMu.Lock()
	defer c.producerMu.Unlock()
	if _, live, err := c.readProducer(ctx, r.GetProducerId()); err != nil {
		return nil, err
	} else if live {
		return &flusspb.RegisterProducerOffsetsResponse{Result: proto.Int32(producerOffsetsAlreadyExists)}, nil
	}
	if _, err := c.store.Txn(ctx, nil, []meta.Op{meta.Put(producerKey(r.GetProducerId()), data)}); err != nil {
		return nil, fmt.Errorf("register producer offsets %s: %w", r.GetProducerId(), err)
	}
	return &flusspb.RegisterProducerOffsetsResponse{Result: proto.Int32(producerOffsetsCreated)}, nil
}

func init() { registerAdmin(wire.GetProducerOffsets, 0, 0, (*Coordinator).handleGetProducerOffsets) }

// handleGetProducerOffsets returns a producer's offsets, leaving out tables the session may
// not READ; an unknown or expired producer gets an empty response.
func (c *Coordinator) handleGetProducerOffsets(ctx context.Context, req *wire.Request) (proto.Message, error) {
	var r flusspb.GetProducerOffsetsRequest
	if err := req.Decode(&r); err != nil {
		return nil, err
	}
	if err := validateProducerID(r.GetProducerId()); err != nil {
		return nil, err
	}
	c.producerMu.Lock()
	rec, ok, err := c.readProducer(ctx, r.GetProducerId())
	c.producerMu.Unlock()
	if err != nil || !ok {
		return &flusspb.GetProducerOffsetsResponse{}, err
	}
	resp := &flusspb.GetProducerOffsetsResponse{ProducerId: proto.String(r.GetProducerId()), ExpirationTime: proto.Int64(rec.ExpirationMs)}
	for _, tid := range rec.tableIDs() {
		if c.authorizeTableID(req, auth.OpRead, tid) != nil {
			continue
		}
		to := &flusspb.PbProducerTableOffsets{TableId: proto.Int64(tid)}
		for _, o := range rec.Offsets {
			if o.TableID != tid {
				continue
			}
			bo := &flusspb.PbBucketOffset{BucketId: proto.Int32(o.Bucket), LogEndOffset: proto.Int64(o.Offset)}
			if o.PartitionID != cluster.NoPartition {
				bo.PartitionId = proto.Int64(o.PartitionID)
			}
			to.BucketOffsets = append(to.BucketOffsets, bo)
		}
		resp.TableOffsets = append(resp.TableOffsets, to)
	}
	return resp, nil
}

func init() {
	registerAdmin(wire.DeleteProducerOffsets, 0, 0, (*Coordinator).handleDeleteProducerOffsets)
}

func (c *Coordinator) handleDeleteProducerOffsets(ctx context.Context, req *wire.Request) (proto.Message, error) {
	var r flusspb.DeleteProducerOffsetsRequest
	if err := req.Decode(&r); err != nil {
		return nil, err
	}
	if err := validateProducerID(r.GetProducerId()); err != nil {
		return nil, err
	}
	c.producerMu.Lock()
	defer c.producerMu.Unlock()
	rec, ok, err := c.readProducer(ctx, r.GetProducerId())
	if err != nil {
		return nil, err
	}
	if ok {
		for _, tid := range rec.tableIDs() {
			if err := c.authorizeTableID(req, auth.OpWrite, tid); err != nil {
				return nil, err
			}
		}
	}
	if _, err := c.store.Txn(ctx, nil, []meta.Op{meta.Delete(producerKey(r.GetProducerId()))}); err != nil {
		return nil, fmt.Errorf("delete producer offsets %s: %w", r.GetProducerId(), err)
	}
	return &flusspb.DeleteProducerOffsetsResponse{}, nil
}
