package metadata

import (
	"bytes"
	"reflect"
	"testing"
	"time"
)

func addTableSeeds(f *testing.F) {
	f.Add([]byte(pyflussCreateTable))
	f.Add([]byte(formatsExample))
	f.Add([]byte(tableJSON(colsPart, `["id","dt"]`, `["dt"]`, `"bucket_count":2`, `{"table.auto-partition.enabled":"true"}`)))
	f.Add([]byte(tableJSON(`[{"name":"r","data_type":{"type":"ROW","fields":[{"name":"a","field_type":{"type":"MAP","key_type":{"type":"STRING","nullable":false},"value_type":{"type":"ARRAY","element_type":{"type":"DECIMAL","precision":5,"scale":1}}}}]}}]`, "", `[]`, "", `{"table.log.ttl":"1h"}`)))
	f.Add([]byte(`{"schema":{"columns":[]},"partition_key":[],"properties":{},"custom_properties":{}}`))
	f.Add([]byte(`{}`))
}

// FuzzParseTableDescriptor checks that decoding never panics, that whatever decodes
// re-encodes to JSON that decodes to the same descriptor, and that CREATE_TABLE preparation
// of it never panics and yields a descriptor the Rust client can read.
func FuzzParseTableDescriptor(f *testing.F) {
	addTableSeeds(f)
	f.Fuzz(func(t *testing.T, data []byte) {
		d, err := ParseTableDescriptor(data)
		if err != nil {
			return
		}
		js := d.JSON()
		d2, err := ParseTableDescriptor(js)
		if err != nil {
			t.Fatalf("re-parse of %s: %v", js, err)
		}
		if !reflect.DeepEqual(d, d2) {
			t.Fatalf("round trip changed the descriptor:\n%#v\n%#v", d, d2)
		}
		if js2 := d2.JSON(); !bytes.Equal(js, js2) {
			t.Fatalf("JSON not stable:\n%s\n%s", js, js2)
		}
		stored, err := PrepareCreateTable(&d, ClusterDefaults{})
		if err != nil {
			return
		}
		out := stored.JSON()
		checkRustParsable(t, out)
		if _, err := ParseTableDescriptor(out); err != nil {
			t.Fatalf("stored form does not parse: %v", err)
		}
		// Accessors must tolerate whatever was accepted.
		_ = stored.Properties.AutoPartition()
		_, _ = stored.Properties.ArrowCompression()
		_ = stored.Properties.LogTTL()
		ap := stored.Properties.AutoPartition()
		_, _ = AutoPartitionTime(time.Unix(0, 0), -ap.NumRetention, ap.TimeUnit, ap.TimeFormat, ap.Location)
	})
}

func FuzzParseSchema(f *testing.F) {
	f.Add([]byte(`{"version":1,"columns":[{"name":"a","data_type":{"type":"INTEGER"},"id":0}],"primary_key":["a"],"highest_field_id":0}`))
	f.Add([]byte(`{"columns":[{"name":"b","data_type":{"type":"ROW","fields":[{"name":"x","field_type":{"type":"INTEGER"}}]}}]}`))
	f.Add([]byte(`{"columns":[{"name":"s","data_type":{"type":"STRING"},"agg_function":{"type":"listagg","parameters":{"delimiter":","}},"id":1},{"name":"k","data_type":{"type":"INTEGER"},"id":0}],"primary_key":["k"]}`))
	f.Fuzz(func(t *testing.T, data []byte) {
		s, err := ParseSchema(data)
		if err != nil {
			return
		}
		js := SchemaJSON(s)
		s2, err := ParseSchema(js)
		if err != nil {
			t.Fatalf("re-parse of %s: %v", js, err)
		}
		if !reflect.DeepEqual(s, s2) {
			t.Fatalf("round trip changed the schema:\n%#v\n%#v", s, s2)
		}
		_ = ValidateAggFunctions(&s)
	})
}

func FuzzParseDataType(f *testing.F) {
	for _, dt := range allTypes() {
		f.Add(DataTypeJSON(dt))
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		dt, err := ParseDataType(data)
		if err != nil {
			return
		}
		_ = dt.String()
		dt2, err := ParseDataType(DataTypeJSON(dt))
		if err != nil || !reflect.DeepEqual(dt, dt2) {
			t.Fatalf("round trip: %v\n%#v\n%#v", err, dt, dt2)
		}
	})
}

func FuzzParseDatabaseDescriptor(f *testing.F) {
	f.Add([]byte(`{"version":1,"comment":"c","custom_properties":{"k":"v"}}`))
	f.Add([]byte(``))
	f.Fuzz(func(t *testing.T, data []byte) {
		d, err := ParseDatabaseDescriptor(data)
		if err != nil {
			return
		}
		d2, err := ParseDatabaseDescriptor(d.JSON())
		if err != nil || !reflect.DeepEqual(d, d2) {
			t.Fatalf("round trip: %v\n%#v\n%#v", err, d, d2)
		}
	})
}

func FuzzTimeFormat(f *testing.F) {
	for _, s := range []string{"yyyyMMdd", "yyyy-MM-dd", "yyyy'Q'q", "'", "yyyy''MM''dd", "[y]"} {
		f.Add(s, "20241111")
	}
	f.Fuzz(func(t *testing.T, format, value string) {
		_ = ValidPartitionTime(value, format)
		for u := TimeUnitDay; u <= TimeUnitHour; u++ {
			if ValidateTimeFormat(format, u, time.UTC) == nil {
				v, err := FormatPartitionTime(time.Date(2031, 7, 9, 13, 0, 0, 0, time.UTC), format)
				if err != nil || !ValidPartitionTime(v, format) {
					t.Fatalf("format %q produced %q which does not parse back (%v)", format, v, err)
				}
			}
		}
	})
}
