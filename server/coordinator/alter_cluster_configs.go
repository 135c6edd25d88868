package coordinator

import (
	"context"
	"encoding/json"
	"fmt"
	"slices"
	"strings"

	"google.golang.org/protobuf/proto"

	"github.com/stromdb/strom/internal/ferr"
	"github.com/stromdb/strom/internal/wire"
	"github.com/stromdb/strom/proto/flusspb"
	"github.com/stromdb/strom/server/auth"
	"github.com/stromdb/strom/server/meta"
)

func init() {
	clusterConfigAPIs.admin(wire.AlterClusterConfigs, 0, 0, (*clusterConfigs).handleAlterClusterConfigs)
}

func (cc *clusterConfigs) handleAlterClusterConfigs(ctx context.Context, req *wire.Request) (proto.Message, error) {
	var r flusspb.AlterClusterConfigsRequest
	if err := req.Decode(&r); err != nil {
		return nil, err
	}
	if len(r.GetAlterConfigs()) == 0 {
		return &flusspb.AlterClusterConfigsResponse{}, nil
	}
	if err := cc.access.authorize(req, auth.OpAlter, auth.ClusterResource()); err != nil {
		return nil, err
	}
	return &flusspb.AlterClusterConfigsResponse{}, cc.alter(ctx, r.GetAlterConfigs())
}

// alter applies SET/DELETE/APPEND/SUBTRACT changes to the dynamic configs as
// Fluss's DynamicConfigManager does: only dynamic options (CONFIG_EXCEPTION otherwise), values
// parsed by the option's type, APPEND/SUBTRACT only on list and map options. Nothing is stored
// unless every change is valid.
func (cc *clusterConfigs) alter(ctx context.Context, changes []*flusspb.PbAlterConfig) error {
	cc.writeMu.Lock()
	defer cc.writeMu.Unlock()
	next := cc.dynamic()
	for _, ch := range changes {
		key := ch.GetConfigKey()
		if strings.HasPrefix(key, "datalake.") {
			return ferr.New(ferr.ConfigException, "The config key %s is not allowed to be changed dynamically: the data lake options are read at start; restart the servers with the new value.", key)
		}
		kind, ok := dynamicOptions[key]
		if !ok {
			return ferr.New(ferr.ConfigException, "The config key %s is not allowed to be changed dynamically.", key)
		}
		value := ch.GetConfigValue()
		switch ch.GetOpType() {
		case alterOpSet:
			if err := validateConfigValue(key, value); err != nil {
				return err
			}
			next[key] = value
		case alterOpDelete:
			delete(next, key)
		case alterOpAppend, alterOpSubtract:
			if kind != kindStringList && kind != kindIntList && kind != kindMap {
				return ferr.New(ferr.ConfigException, "APPEND and SUBTRACT are only supported for list or map config keys, but %s is not.", key)
			}
			if err := validateConfigValue(key, value); err != nil {
				return err
			}
			items := splitList(next[key])
			entryKey := func(s string) string {
				if kind == kindMap {
					k, _, _ := strings.Cut(s, ":")
					return k
				}
				return s
			}
			if ch.GetOpType() == alterOpAppend {
				if kind == kindMap && slices.ContainsFunc(items, func(s string) bool { return entryKey(s) == entryKey(value) }) {
					return ferr.New(ferr.ConfigException, "%s must not contain duplicate map entry keys: '%s'.", key, entryKey(value))
				}
				items = append(items, value)
			} else {
				items = slices.DeleteFunc(items, func(s string) bool { return entryKey(s) == entryKey(value) })
			}
			if len(items) == 0 {
				delete(next, key)
			} else {
				next[key] = strings.Join(items, ",")
			}
		default:
			return ferr.New(ferr.ConfigException, "Unsupported config operation type %d", ch.GetOpType())
		}
	}
	data, err := json.Marshal(next)
	if err != nil {
		return err
	}
	if _, err := cc.store.Txn(ctx, nil, []meta.Op{meta.Put(clusterConfigKey, data)}); err != nil {
		return fmt.Errorf("store cluster configs: %w", err)
	}
	cc.mu.Lock()
	cc.values = next
	cc.mu.Unlock()
	cc.log.Info("altered cluster configs", "changes", len(changes))
	return nil
}

func splitList(s string) []string {
	var out []string
	for _, v := range strings.Split(s, ",") {
		if v = strings.TrimSpace(v); v != "" {
			out = append(out, v)
		}
	}
	return out
}
