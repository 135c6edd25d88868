package coordinator

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"sync"
	"time"

	"github.com/stromdb/strom/internal/ferr"
	"github.com/stromdb/strom/internal/metadata"
	"github.com/stromdb/strom/server/meta"
)

// Producer offsets (REGISTER/GET/DELETE_PRODUCER_OFFSETS): a named producer (e.g. a Flink sink
// recovering from a checkpoint) records the log end offsets it saw per bucket, with an
// expiration time. Registration is "create if absent or expired": a live snapshot is never
// overwritten (result ALREADY_EXISTS). Expired snapshots read as absent and are deleted when
// next touched.

// producerOffsets is the producer offsets service: it owns the producers/ records of the
// metadata store and serialises their check-and-set.
type producerOffsets struct {
	store  recordStore
	tables tableByID // to authorise the tables a snapshot names
	access access
	now    func() time.Time
	ttl    time.Duration // coordinator.producer-offsets.ttl (0: DefaultProducerOffsetsTTL)
	mu     sync.Mutex    // serialises check-and-set
}

var producerOffsetAPIs apiTable[*producerOffsets]

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
func (s *producerOffsets) readProducer(ctx context.Context, id string) (producerRecord, bool, error) {
	data, err := s.store.Get(ctx, producerKey(id))
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
	if rec.ExpirationMs <= s.now().UnixMilli() {
		if _, err := s.store.Txn(ctx, nil, []meta.Op{meta.Delete(producerKey(id))}); err != nil {
			return producerRecord{}, false, err
		}
		return producerRecord{}, false, nil
	}
	return rec, true, nil
}
