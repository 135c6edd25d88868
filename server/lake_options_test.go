package server

import (
	"testing"

	"github.com/stromdb/strom/server/config"
	"github.com/stromdb/strom/server/lakeconf"
)

func TestLakeTablesEnabled(t *testing.T) {
	iceberg := lakeconf.Config{Format: "iceberg"}
	for _, tc := range []struct {
		set     string // datalake.enabled, "" for unset
		lake    lakeconf.Config
		want    bool
		wantErr bool
	}{
		{"", iceberg, true, false},
		{"", lakeconf.Config{}, false, false},
		{"false", iceberg, false, false},
		{"true", iceberg, true, false},
		{"true", lakeconf.Config{}, false, true},
	} {
		cfg := config.Default()
		if tc.set != "" {
			if err := cfg.Set("datalake.enabled", tc.set); err != nil {
				t.Fatal(err)
			}
		}
		got, err := lakeTablesEnabled(cfg, tc.lake)
		if got != tc.want || (err != nil) != tc.wantErr {
			t.Errorf("datalake.enabled=%q, format %q: %v, %v; want %v, error %v", tc.set, tc.lake.Format, got, err, tc.want, tc.wantErr)
		}
	}
}
