package metadata

import (
	"fmt"
	"testing"
	"time"
)

// TableProperties reads Java's spellings, falls back to the option's default when a property
// is absent or unparseable, and works on a nil map.
func TestTablePropertiesAccessors(t *testing.T) {
	var none TableProperties
	set := TableProperties{
		PropLogFormat:                 "indexed",
		PropKvFormat:                  "INDEXED",
		PropArrowCompressionType:      "lz4_frame",
		PropArrowCompressionZstdLevel: "7",
		PropMergeEngine:               "versioned",
		PropMergeEngineVersionColumn:  "ts",
		PropDeleteBehavior:            "disable",
		PropLogTTL:                    "2 h",
		PropLogTieredLocalSegments:    "not a number",
		PropDatalakeEnabled:           "TRUE",
		PropDatalakeFormat:            "PAIMON",
		PropStatisticsColumns:         " a, ,b ",
	}
	cases := []struct {
		name      string
		got, want any
	}{
		{"log format default", none.LogFormat(), LogFormatArrow},
		{"log format", set.LogFormat(), LogFormatIndexed},
		{"kv format", set.KvFormat(), KvFormatIndexed},
		{"compression default", pair(none.ArrowCompression()), pair(CompressionZstd, 3)},
		{"compression", pair(set.ArrowCompression()), pair(CompressionLZ4Frame, 7)},
		{"merge engine", pair(set.MergeEngine()), pair(MergeEngineVersioned, "ts")},
		{"delete behavior", set.DeleteBehavior(), DeleteDisable},
		{"ttl default", none.LogTTL(), 7 * 24 * time.Hour},
		{"ttl", set.LogTTL(), 2 * time.Hour},
		{"unparseable falls back to the default", set.TieredLogLocalSegments(), 2},
		{"lake", pair(set.DataLakeEnabled(), set.DataLakeFormat()), pair(true, "paimon")},
		{"lake default", pair(none.DataLakeEnabled(), none.DataLakeFormat()), pair(false, "")},
		{"statistics", fmt.Sprint(set.StatisticsColumns()), "false [a b]"},
		{"statistics default", fmt.Sprint(none.StatisticsColumns()), "false []"},
		{"auto-increment cache default", none.AutoIncrementCacheSize(), int64(100000)},
	}
	for _, c := range cases {
		if c.got != c.want {
			t.Errorf("%s: got %v, want %v", c.name, c.got, c.want)
		}
	}
}

type twoValues struct{ a, b any }

func pair[A, B any](a A, b B) twoValues { return twoValues{a, b} }
