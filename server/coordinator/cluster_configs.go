package coordinator

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"maps"
	"slices"
	"strconv"
	"strings"

	"google.golang.org/protobuf/proto"

	"github.com/stromdb/strom/internal/ferr"
	"github.com/stromdb/strom/internal/wire"
	"github.com/stromdb/strom/proto/flusspb"
	"github.com/stromdb/strom/server/auth"
	"github.com/stromdb/strom/server/config"
	"github.com/stromdb/strom/server/meta"
)

// Dynamic cluster configs (DESCRIBE/ALTER_CLUSTER_CONFIGS). Fluss lets a fixed set of server
// options change at runtime; the changed values are persisted (here under clusterConfigKey)
// and override the server's startup options. None of these options configures a component
// Strom has (remote data dirs, RocksDB rate limits, disk-ratio throttling, lake catalogs), so
// Strom stores, validates and describes them but nothing else reads them yet; datalake.* is
// refused because Strom has no data lake to configure.

const clusterConfigKey = "configs/cluster"

// configKind is how a dynamic option's value is validated.
type configKind int

const (
	kindString configKind = iota
	kindBool
	kindInt
	kindDouble
	kindDuration
	kindMemory
	kindStringList
	kindIntList
	kindMap
)

// dynamicOptions are the options Fluss's DynamicServerConfig allows to change at runtime.
var dynamicOptions = map[string]configKind{
	"log.retention.roll-active-segment.enabled":                      kindBool,
	"log.replica.min-in-sync-replicas-number":                        kindInt,
	"kv.leader-replica.memory-reserved":                              kindMemory,
	"kv.rocksdb.shared-rate-limiter.bytes-per-sec":                   kindMemory,
	"kv.snapshot.interval":                                           kindDuration,
	"server.data-disk.write-recover-ratio":                           kindDouble,
	"server.data-disk.write-limit-ratio":                             kindDouble,
	"server.historical-partition.lookup-cache.max-disk-ratio":        kindDouble,
	"server.historical-partition.lookuper-cache.expire-after-access": kindDuration,
	"remote.data.dirs":                                               kindStringList,
	"remote.data.dirs.strategy":                                      kindString,
	"remote.data.dirs.weights":                                       kindIntList,
	"security.sasl.plain.credentials":                                kindMap,
}

// redacted is how Fluss shows secret values.
const redacted = "******"

func redactConfig(key, value string) string {
	if key == "security.sasl.plain.credentials" || key == "security.sasl.plain.jaas.config" ||
		(strings.HasPrefix(key, "security.sasl.listener.name.") && strings.HasSuffix(key, ".plain.jaas.config")) {
		return redacted
	}
	return value
}

func validateConfigValue(key, value string) error {
	kind := dynamicOptions[key]
	var err error
	switch kind {
	case kindBool:
		_, err = strconv.ParseBool(value)
	case kindInt:
		_, err = strconv.ParseInt(value, 10, 32)
	case kindDouble:
		_, err = strconv.ParseFloat(value, 64)
	case kindDuration:
		_, err = config.ParseDuration(value)
	case kindMemory:
		_, err = config.ParseBytes(value)
	case kindIntList:
		for _, v := range strings.Split(value, ",") {
			if _, perr := strconv.ParseInt(strings.TrimSpace(v), 10, 32); perr != nil {
				err = perr
			}
		}
	case kindMap:
		for _, e := range strings.Split(value, ",") {
			if _, _, ok := strings.Cut(e, ":"); !ok {
				err = errors.New("map entries must be key:value")
			}
		}
	case kindString:
		if key == "remote.data.dirs.strategy" && value != "ROUND_ROBIN" && value != "WEIGHTED_ROUND_ROBIN" {
			err = errors.New("must be ROUND_ROBIN or WEIGHTED_ROUND_ROBIN")
		}
	}
	if err != nil {
		return ferr.New(ferr.ConfigException, "Could not parse value '%s' for key '%s': %v", value, key, err)
	}
	return nil
}

func (c *Coordinator) loadClusterConfigs(ctx context.Context) error {
	data, err := c.store.Get(ctx, clusterConfigKey)
	if errors.Is(err, meta.ErrNotFound) {
		c.dynamicConfigs = map[string]string{}
		return nil
	}
	if err != nil {
		return err
	}
	m := map[string]string{}
	if err := json.Unmarshal(data, &m); err != nil {
		return fmt.Errorf("cluster configs: corrupt record: %w", err)
	}
	c.dynamicConfigs = m
	return nil
}

// DynamicConfigs returns the persisted dynamic cluster configs.
func (c *Coordinator) DynamicConfigs() map[string]string {
	c.mu.RLock()
	defer c.mu.RUnlock()
	return maps.Clone(c.dynamicConfigs)
}

// AlterClusterConfigs applies SET/DELETE/APPEND/SUBTRACT changes to the dynamic configs as
// Fluss's DynamicConfigManager does: only dynamic options (CONFIG_EXCEPTION otherwise), values
// parsed by the option's type, APPEND/SUBTRACT only on list and map options. Nothing is stored
// unless every change is valid.
func (c *Coordinator) AlterClusterConfigs(ctx context.Context, changes []*flusspb.PbAlterConfig) error {
	c.ddlMu.Lock()
	defer c.ddlMu.Unlock()
	next := c.DynamicConfigs()
	for _, ch := range changes {
		key := ch.GetConfigKey()
		if strings.HasPrefix(key, "datalake.") {
			return ferr.New(ferr.ConfigException, "The config key %s cannot be changed: Strom has no data lake integration.", key)
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
	if _, err := c.store.Txn(ctx, nil, []meta.Op{meta.Put(clusterConfigKey, data)}); err != nil {
		return fmt.Errorf("store cluster configs: %w", err)
	}
	c.mu.Lock()
	c.dynamicConfigs = next
	c.mu.Unlock()
	c.log.Info("altered cluster configs", "changes", len(changes))
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

func init() {
	registerReadOnly(wire.DescribeClusterConfigs, 0, 0, (*Coordinator).handleDescribeClusterConfigs)
}

func (c *Coordinator) handleDescribeClusterConfigs(ctx context.Context, req *wire.Request) (proto.Message, error) {
	var r flusspb.DescribeClusterConfigsRequest
	if err := req.Decode(&r); err != nil {
		return nil, err
	}
	if err := c.authorize(req, auth.OpDescribe, auth.ClusterResource()); err != nil {
		return nil, err
	}
	dynamic := c.DynamicConfigs()
	resp := &flusspb.DescribeClusterConfigsResponse{}
	for _, k := range slices.Sorted(maps.Keys(c.opts.StaticConfigs)) {
		if _, ok := dynamic[k]; ok {
			continue
		}
		resp.Configs = append(resp.Configs, &flusspb.PbDescribeConfig{ConfigKey: proto.String(k),
			ConfigValue: proto.String(redactConfig(k, c.opts.StaticConfigs[k])), ConfigSource: proto.String("INITIAL_SERVER_CONFIG")})
	}
	for _, k := range slices.Sorted(maps.Keys(dynamic)) {
		resp.Configs = append(resp.Configs, &flusspb.PbDescribeConfig{ConfigKey: proto.String(k),
			ConfigValue: proto.String(redactConfig(k, dynamic[k])), ConfigSource: proto.String("DYNAMIC_SERVER_CONFIG")})
	}
	return resp, nil
}

func init() { registerAdmin(wire.AlterClusterConfigs, 0, 0, (*Coordinator).handleAlterClusterConfigs) }

func (c *Coordinator) handleAlterClusterConfigs(ctx context.Context, req *wire.Request) (proto.Message, error) {
	var r flusspb.AlterClusterConfigsRequest
	if err := req.Decode(&r); err != nil {
		return nil, err
	}
	if len(r.GetAlterConfigs()) == 0 {
		return &flusspb.AlterClusterConfigsResponse{}, nil
	}
	if err := c.authorize(req, auth.OpAlter, auth.ClusterResource()); err != nil {
		return nil, err
	}
	return &flusspb.AlterClusterConfigsResponse{}, c.AlterClusterConfigs(ctx, r.GetAlterConfigs())
}
