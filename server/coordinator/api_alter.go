package coordinator

import (
	"context"

	"google.golang.org/protobuf/proto"

	"github.com/stromdb/strom/internal/ferr"
	"github.com/stromdb/strom/internal/metadata"
	"github.com/stromdb/strom/internal/wire"
	"github.com/stromdb/strom/proto/flusspb"
	"github.com/stromdb/strom/server/auth"
)

// AlterConfigOpType values of PbAlterConfig.op_type.
const (
	alterOpSet      int32 = 0
	alterOpDelete   int32 = 1
	alterOpAppend   int32 = 2
	alterOpSubtract int32 = 3
)

// propertyChanges converts PbAlterConfig entries of ALTER_TABLE / ALTER_DATABASE. Only SET and
// DELETE apply to tables and databases; APPEND and SUBTRACT are refused as Java refuses them
// (an IllegalArgumentException, UNKNOWN_SERVER_ERROR on the wire).
func propertyChanges(what string, in []*flusspb.PbAlterConfig) ([]metadata.PropertyChange, error) {
	out := make([]metadata.PropertyChange, 0, len(in))
	for _, c := range in {
		switch c.GetOpType() {
		case alterOpSet:
			out = append(out, metadata.PropertyChange{Key: c.GetConfigKey(), Value: c.GetConfigValue()})
		case alterOpDelete:
			out = append(out, metadata.PropertyChange{Key: c.GetConfigKey(), Reset: true})
		default:
			return nil, ferr.New(ferr.UnknownServerError, "Unsupported alter %s configs op type %d", what, c.GetOpType())
		}
	}
	return out, nil
}

func addColumns(in []*flusspb.PbAddColumn) ([]metadata.AddColumn, error) {
	out := make([]metadata.AddColumn, 0, len(in))
	for _, pc := range in {
		t, err := metadata.ParseDataType(pc.GetDataTypeJson())
		if err != nil {
			return nil, ferr.New(ferr.UnknownServerError, "Invalid data type of column %s: %v", pc.GetColumnName(), err)
		}
		a := metadata.AddColumn{Name: pc.GetColumnName(), Type: t, Comment: pc.GetComment(), Position: pc.GetColumnPositionType()}
		if pc.AggFunctionType != nil {
			canon, ok := metadata.CanonicalAggFunction(pc.GetAggFunctionType())
			if !ok {
				return nil, ferr.New(ferr.InvalidConfigException, "Unknown aggregation function type: %s", pc.GetAggFunctionType())
			}
			a.AggFunction = &metadata.AggFunction{Type: canon}
			for _, kv := range pc.GetAggFunctionParams() {
				if a.AggFunction.Parameters == nil {
					a.AggFunction.Parameters = map[string]string{}
				}
				a.AggFunction.Parameters[kv.GetKey()] = kv.GetValue()
			}
		}
		out = append(out, a)
	}
	return out, nil
}

func init() { registerAdmin(wire.AlterTable, 0, 0, (*Coordinator).handleAlterTable) }

func (c *Coordinator) handleAlterTable(ctx context.Context, req *wire.Request) (proto.Message, error) {
	var r flusspb.AlterTableRequest
	if err := req.Decode(&r); err != nil {
		return nil, err
	}
	path := tablePathOf(r.GetTablePath())
	if err := c.authorize(req, auth.OpAlter, auth.TableResource(path.Database, path.Table)); err != nil {
		return nil, err
	}
	var a TableAlteration
	var err error
	if a.Properties, err = propertyChanges("table", r.GetConfigChanges()); err != nil {
		return nil, err
	}
	if a.AddColumns, err = addColumns(r.GetAddColumns()); err != nil {
		return nil, err
	}
	switch {
	case len(r.GetDropColumns()) > 0:
		a.Unsupported = "drop"
	case len(r.GetRenameColumns()) > 0:
		a.Unsupported = "rename"
	case len(r.GetModifyColumns()) > 0:
		a.Unsupported = "modify"
	}
	return &flusspb.AlterTableResponse{}, c.AlterTable(ctx, path, a, r.GetIgnoreIfNotExists())
}

func init() { registerAdmin(wire.AlterDatabase, 0, 0, (*Coordinator).handleAlterDatabase) }

func (c *Coordinator) handleAlterDatabase(ctx context.Context, req *wire.Request) (proto.Message, error) {
	var r flusspb.AlterDatabaseRequest
	if err := req.Decode(&r); err != nil {
		return nil, err
	}
	if err := c.authorize(req, auth.OpAlter, auth.DatabaseResource(r.GetDatabaseName())); err != nil {
		return nil, err
	}
	changes, err := propertyChanges("database", r.GetConfigChanges())
	if err != nil {
		return nil, err
	}
	var comment *string
	if r.Comment != nil {
		comment = proto.String(r.GetComment())
	}
	return &flusspb.AlterDatabaseResponse{}, c.AlterDatabase(ctx, r.GetDatabaseName(), changes, comment, r.GetIgnoreIfNotExists())
}
