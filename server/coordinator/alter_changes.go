package coordinator

import (
	"github.com/stromdb/strom/internal/ferr"
	"github.com/stromdb/strom/internal/metadata"
	"github.com/stromdb/strom/proto/flusspb"
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

func addColumnsOf(in []*flusspb.PbAddColumn) ([]metadata.AddColumn, error) {
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
