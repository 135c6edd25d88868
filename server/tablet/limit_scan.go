package tablet

import (
	"context"

	"google.golang.org/protobuf/proto"

	"github.com/stromdb/strom/internal/wire"
	"github.com/stromdb/strom/proto/flusspb"
)

// LIMIT_SCAN (1033): version 0 only.
func init() { kvAPIs.register(wire.LimitScan, 0, 0, (*kvService).handleLimitScan) }

// handleLimitScan returns up to limit rows of one bucket (docs/primary-keys.md §5, §6). Log
// tables: whole batches from max(log start, HW-limit) to the HW, is_log_table=true (the
// client keeps the last limit rows). Primary-key tables: the first limit current values in
// key order as a value record batch, is_log_table=false. Errors go in the body.
func (s *kvService) handleLimitScan(ctx context.Context, req *wire.Request) (proto.Message, error) {
	var r flusspb.LimitScanRequest
	if err := req.Decode(&r); err != nil {
		return nil, err
	}
	resp := &flusspb.LimitScanResponse{}
	rep, err := s.replica(bucketOf(r.GetTableId(), r.PartitionId, r.GetBucketId()))
	if err == nil && rep.KV != nil {
		err = s.readable(rep)
	}
	if err == nil {
		limit := max(int(r.GetLimit()), 0)
		if rep.KV != nil {
			resp.IsLogTable = proto.Bool(false)
			resp.Records, err = rep.KV.LimitScan(nil, limit)
		} else {
			resp.IsLogTable = proto.Bool(true)
			resp.Records, _, err = rep.Log.ReadLastRecords(limit)
		}
	}
	if err != nil {
		resp = &flusspb.LimitScanResponse{}
		setBucketError(&resp.ErrorCode, &resp.ErrorMessage, err)
	}
	return resp, nil
}
