package bench

import (
	"context"
	"fmt"
	"time"

	"google.golang.org/protobuf/proto"

	"github.com/stromdb/strom/internal/ferr"
	"github.com/stromdb/strom/internal/wire"
	"github.com/stromdb/strom/proto/flusspb"
)

// readyTimeout bounds how long a new table's buckets may take to start serving.
const readyTimeout = 60 * time.Second

// waitForBuckets probes every bucket of t until its leader serves it, before any clock
// starts. A leader named by GET_METADATA may still be opening the bucket's replica (Apache
// Fluss answers UNKNOWN_TABLE_OR_BUCKET until a primary-key bucket's KV store is open);
// clients retry that error, and the bench must not count the wait as write time. The probe
// is read-only: a LIST_OFFSETS of the latest offset for a log table, a LOOKUP of one key for
// a primary-key table, so the table stays empty.
func (s *session) waitForBuckets(ctx context.Context, t *tableInfo, pk bool) error {
	var keys [][]byte
	if pk {
		var err error
		if keys, err = bucketKeys(s.cfg); err != nil {
			return err
		}
	}
	return s.waitForBucketsWith(ctx, t, pk, keys)
}

// waitForBucketsWith is waitForBuckets for a table whose per-bucket LOOKUP probe keys (of a
// primary-key table) the caller gives.
func (s *session) waitForBucketsWith(ctx context.Context, t *tableInfo, pk bool, keys [][]byte) error {
	deadline := time.Now().Add(readyTimeout)
	pending := make([]int32, s.cfg.Buckets)
	for b := range pending {
		pending[b] = int32(b)
	}
	var err error
	conns := map[string]*wire.ClientConn{}
	defer func() {
		for _, c := range conns {
			c.Close()
		}
	}()
	for {
		var still []int32
		var lastErr error
		for _, b := range pending {
			addr := t.leaders[b]
			c := conns[addr]
			if c == nil {
				if c, err = wire.Dial(ctx, addr, s.cfg.clientConfig()); err != nil {
					return fmt.Errorf("connect to tablet server %s: %w", addr, err)
				}
				conns[addr] = c
			}
			var key []byte
			if pk {
				key = keys[b]
			}
			err := probeBucket(ctx, c, t.id, b, pk, key)
			if err == nil {
				continue
			}
			if !retriable(err) {
				return fmt.Errorf("probe %s bucket %d: %w", t.path, b, err)
			}
			still, lastErr = append(still, b), err
		}
		if len(still) == 0 {
			return nil
		}
		if time.Now().After(deadline) {
			return fmt.Errorf("%s: %d buckets not served after %s: %w", t.path, len(still), readyTimeout, lastErr)
		}
		pending = still
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-time.After(50 * time.Millisecond):
		}
	}
}

// retriable reports the errors a client retries while a new bucket comes up.
func retriable(err error) bool {
	switch ferr.CodeOf(err) {
	case ferr.UnknownTableOrBucketException, ferr.NotLeaderOrFollower, ferr.LeaderNotAvailableException:
		return true
	}
	return false
}

// bucketKeys returns, for every bucket, the encoded key of the smallest id that hashes to it.
func bucketKeys(cfg *Config) ([][]byte, error) {
	kc := newKeyCodec(cfg)
	keys := make([][]byte, cfg.Buckets)
	found := 0
	for id := int64(0); found < cfg.Buckets; id++ {
		if id > int64(cfg.Buckets)*1000 {
			return nil, fmt.Errorf("no key hashes to some of the %d buckets", cfg.Buckets)
		}
		key, b, err := kc.key(nil, id)
		if err != nil {
			return nil, err
		}
		if keys[b] == nil {
			keys[b] = key
			found++
		}
	}
	return keys, nil
}

func probeBucket(ctx context.Context, c *wire.ClientConn, table int64, bucket int32, pk bool, key []byte) error {
	if pk {
		var resp flusspb.LookupResponse
		req := &flusspb.LookupRequest{TableId: proto.Int64(table), BucketsReq: []*flusspb.PbLookupReqForBucket{{BucketId: proto.Int32(bucket), Keys: [][]byte{key}}}}
		if err := c.Call(ctx, wire.Lookup, req, &resp); err != nil {
			return err
		}
		for _, br := range resp.BucketsResp {
			if err := bucketError("lookup", br.GetBucketId(), br.ErrorCode, br.ErrorMessage); err != nil {
				return err
			}
		}
		return nil
	}
	var resp flusspb.ListOffsetsResponse
	req := &flusspb.ListOffsetsRequest{FollowerServerId: proto.Int32(-1), OffsetType: proto.Int32(listOffsetsLatest), TableId: proto.Int64(table), BucketId: []int32{bucket}}
	if err := c.Call(ctx, wire.ListOffsets, req, &resp); err != nil {
		return err
	}
	for _, br := range resp.BucketsResp {
		if err := bucketError("list_offsets", br.GetBucketId(), br.ErrorCode, br.ErrorMessage); err != nil {
			return err
		}
	}
	return nil
}

// listOffsetsLatest is LIST_OFFSETS' offset_type for the latest offset.
const listOffsetsLatest = 1
