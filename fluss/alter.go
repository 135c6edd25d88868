package fluss

import (
	"context"
	"fmt"

	"google.golang.org/protobuf/proto"

	"github.com/stromdb/strom/internal/metadata"
	"github.com/stromdb/strom/internal/wire"
	"github.com/stromdb/strom/proto/flusspb"
)

// TableChange is one change of an ALTER TABLE: SetOption, ResetOption or AddColumn.
type TableChange struct {
	option *flusspb.PbAlterConfig
	column *flusspb.PbAddColumn
}

// Wire values of ALTER TABLE's config operation and column position (Java AlterConfigOpType,
// ColumnPositionType).
const (
	alterConfigSet    int32 = 0
	alterConfigDelete int32 = 1
	columnPositionEnd int32 = 0
)

// SetOption sets a table option (for example "table.datalake.enabled" or a custom key).
func SetOption(key, value string) TableChange {
	return TableChange{option: &flusspb.PbAlterConfig{ConfigKey: proto.String(key), ConfigValue: proto.String(value), OpType: proto.Int32(alterConfigSet)}}
}

// ResetOption removes a table option, so its default applies again.
func ResetOption(key string) TableChange {
	return TableChange{option: &flusspb.PbAlterConfig{ConfigKey: proto.String(key), OpType: proto.Int32(alterConfigDelete)}}
}

// AddColumn appends a column to the table's schema; Fluss requires it to be nullable. Rows
// written before read it as NULL.
func AddColumn(name string, typ DataType, comment string) TableChange {
	c := &flusspb.PbAddColumn{ColumnName: proto.String(name), DataTypeJson: metadata.DataTypeJSON(typ.internal()),
		ColumnPositionType: proto.Int32(columnPositionEnd)}
	if comment != "" {
		c.Comment = proto.String(comment)
	}
	return TableChange{column: c}
}

// AlterTable applies changes to a table in one ALTER_TABLE request: all of them, or none (the
// server's error says which change it refused, INVALID_ALTER_TABLE for an option Fluss does not
// allow to change). Adding columns creates a new schema version.
func (a *Admin) AlterTable(ctx context.Context, path TablePath, changes []TableChange, ignoreIfNotExists bool) error {
	req := &flusspb.AlterTableRequest{TablePath: pbPath(path), IgnoreIfNotExists: proto.Bool(ignoreIfNotExists)}
	for _, c := range changes {
		switch {
		case c.option != nil:
			req.ConfigChanges = append(req.ConfigChanges, c.option)
		case c.column != nil:
			req.AddColumns = append(req.AddColumns, c.column)
		default:
			return fmt.Errorf("fluss: alter table %s: empty change", path)
		}
	}
	return a.conn.callCoordinator(ctx, wire.AlterTable, req, &flusspb.AlterTableResponse{})
}

// GetTableStats returns the number of rows in each bucket of a table (of one partition of a
// partitioned table, by name): the live keys of a primary-key table, the records between the
// log start and the high watermark of a log table. Buckets are asked of their leaders.
func (a *Admin) GetTableStats(ctx context.Context, path TablePath, partition string) (out map[int32]int64, err error) {
	err = a.conn.retryRouting(ctx, func() error {
		out, err = a.tableStatsOnce(ctx, path, partition)
		return err
	})
	return out, err
}

func (a *Admin) tableStatsOnce(ctx context.Context, path TablePath, partition string) (map[int32]int64, error) {
	lb, err := a.leaderBuckets(ctx, path, partition, nil)
	if err != nil {
		return nil, err
	}
	out := map[int32]int64{}
	for _, n := range lb.leaders() {
		req := &flusspb.GetTableStatsRequest{TableId: proto.Int64(lb.tableID)}
		for _, b := range lb.byLeader[n] {
			br := &flusspb.PbTableStatsReqForBucket{BucketId: proto.Int32(b)}
			if lb.partitionID >= 0 {
				br.PartitionId = proto.Int64(lb.partitionID)
			}
			req.BucketsReq = append(req.BucketsReq, br)
		}
		var resp flusspb.GetTableStatsResponse
		if err := a.conn.call(ctx, n, wire.GetTableStats, req, &resp); err != nil {
			return nil, err
		}
		for _, br := range resp.BucketsResp {
			if c := br.GetErrorCode(); c != 0 {
				return nil, &Error{Code: ErrorCode(c), Message: br.GetErrorMessage()}
			}
			out[br.GetBucketId()] = br.GetRowCount()
		}
	}
	return out, nil
}

// ClusterConfig is one server option as DESCRIBE_CLUSTER_CONFIGS reports it. Source is where
// the value comes from: INITIAL_SERVER_CONFIG (the server's configuration at start) or
// DYNAMIC_SERVER_CONFIG (set with AlterClusterConfigs). Secret values read "******".
type ClusterConfig struct {
	Key, Value, Source string
}

// ConfigChange is one change of AlterClusterConfigs: SetConfig or ResetConfig.
type ConfigChange struct{ pb *flusspb.PbAlterConfig }

// SetConfig sets a dynamic server option.
func SetConfig(key, value string) ConfigChange {
	return ConfigChange{SetOption(key, value).option}
}

// ResetConfig removes a dynamic server option, so the initial value applies again.
func ResetConfig(key string) ConfigChange {
	return ConfigChange{ResetOption(key).option}
}

// DescribeClusterConfigs returns the server options with their values and sources.
func (a *Admin) DescribeClusterConfigs(ctx context.Context) ([]ClusterConfig, error) {
	var resp flusspb.DescribeClusterConfigsResponse
	if err := a.conn.callCoordinator(ctx, wire.DescribeClusterConfigs, &flusspb.DescribeClusterConfigsRequest{}, &resp); err != nil {
		return nil, err
	}
	out := make([]ClusterConfig, 0, len(resp.Configs))
	for _, c := range resp.Configs {
		out = append(out, ClusterConfig{Key: c.GetConfigKey(), Value: c.GetConfigValue(), Source: c.GetConfigSource()})
	}
	return out, nil
}

// AlterClusterConfigs changes dynamic server options, all or none; only the options Fluss
// lets change at runtime are accepted (CONFIG_EXCEPTION otherwise). Changes persist across
// restarts.
func (a *Admin) AlterClusterConfigs(ctx context.Context, changes []ConfigChange) error {
	req := &flusspb.AlterClusterConfigsRequest{}
	for _, c := range changes {
		req.AlterConfigs = append(req.AlterConfigs, c.pb)
	}
	return a.conn.callCoordinator(ctx, wire.AlterClusterConfigs, req, &flusspb.AlterClusterConfigsResponse{})
}
