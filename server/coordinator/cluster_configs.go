package coordinator

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"maps"
	"strconv"
	"strings"
	"sync"

	"github.com/stromdb/strom/internal/ferr"
	"github.com/stromdb/strom/internal/options"
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

// clusterConfigs is the dynamic cluster configs service: it owns the record under
// clusterConfigKey and serves DESCRIBE_CLUSTER_CONFIGS and ALTER_CLUSTER_CONFIGS.
type clusterConfigs struct {
	store  recordStore
	access access
	log    *slog.Logger
	// static are the options the server started with, as DESCRIBE_CLUSTER_CONFIGS reports
	// them (INITIAL_SERVER_CONFIG).
	static map[string]string

	writeMu sync.Mutex        // serialises ALTER_CLUSTER_CONFIGS
	mu      sync.RWMutex      // guards values
	values  map[string]string // the persisted ALTER_CLUSTER_CONFIGS values
}

var clusterConfigAPIs apiTable[*clusterConfigs]

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

// redactConfig hides the value of every option the registry calls secret (passwords, JAAS
// strings, s3.secret-key, s3.access-key, …), as Fluss shows them.
func redactConfig(key, value string) string {
	if options.Sensitive(key) {
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

// load reads the persisted configs.
func (cc *clusterConfigs) load(ctx context.Context) error {
	data, err := cc.store.Get(ctx, clusterConfigKey)
	if errors.Is(err, meta.ErrNotFound) {
		cc.values = map[string]string{}
		return nil
	}
	if err != nil {
		return err
	}
	m := map[string]string{}
	if err := json.Unmarshal(data, &m); err != nil {
		return fmt.Errorf("cluster configs: corrupt record: %w", err)
	}
	cc.values = m
	return nil
}

// dynamic returns the persisted dynamic cluster configs.
func (cc *clusterConfigs) dynamic() map[string]string {
	cc.mu.RLock()
	defer cc.mu.RUnlock()
	return maps.Clone(cc.values)
}
