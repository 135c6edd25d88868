package server

import (
	"fmt"

	"github.com/stromdb/strom/internal/options"
	"github.com/stromdb/strom/server/config"
	"github.com/stromdb/strom/server/lakeconf"
)

// lakeTablesEnabled says whether tables may enable the lake (metadata.ClusterDefaults'
// DataLakeEnabled), as Fluss 1.0 reads datalake.enabled: unset, a configured datalake.format
// is enough (Fluss 0.9.1's behaviour); false binds new tables to the format but refuses
// table.datalake.enabled; true requires datalake.format.
func lakeTablesEnabled(cfg config.Config, lake lakeconf.Config) (bool, error) {
	if !options.DatalakeEnabled.IsSet(cfg.Raw) {
		return lake.Enabled(), nil
	}
	on, err := options.DatalakeEnabled.Get(cfg.Raw)
	if err != nil {
		return false, err
	}
	if on && !lake.Enabled() {
		return false, fmt.Errorf("option %s: true needs %s to be set", options.DatalakeEnabled.Key, lakeconf.OptFormat)
	}
	return on, nil
}
