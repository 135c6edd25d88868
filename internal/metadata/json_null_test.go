package metadata

import (
	"reflect"
	"strings"
	"testing"
)

// Java's serdes (Jackson) read a JSON null in a collection field as an empty collection: the
// NullNode iterates as empty. Third-party clients send "partition_key": null and the like.
func TestParseTableDescriptorNullCollections(t *testing.T) {
	js := `{"version":1,"schema":{"columns":[{"name":"id","data_type":{"type":"INTEGER"},"comment":null,"agg_function":null}],` +
		`"primary_key":null,"auto_increment_column":null},"comment":null,"partition_key":null,"bucket_key":null,"bucket_count":2,` +
		`"properties":null,"custom_properties":null}`
	d, err := ParseTableDescriptor([]byte(js))
	if err != nil {
		t.Fatal(err)
	}
	if d.HasPrimaryKey() || d.HasComment || d.BucketCount != 2 ||
		!reflect.DeepEqual(d.PartitionKeys, []string{}) || !reflect.DeepEqual(d.BucketKeys, []string{}) ||
		len(d.Properties) != 0 || d.Properties == nil || len(d.CustomProperties) != 0 || d.CustomProperties == nil ||
		d.Schema.Columns[0].Comment != "" || d.Schema.Columns[0].AggFunction != nil {
		t.Fatalf("unexpected %#v", d)
	}
	// The stored form writes the empty collections back, never null.
	out := string(d.JSON())
	if strings.Contains(out, "null") || !strings.Contains(out, `"partition_key":[]`) {
		t.Fatalf("JSON() = %s", out)
	}
}

// An absent collection field is still an error, as Java fails on it.
func TestParseTableDescriptorMissingCollections(t *testing.T) {
	base := map[string]string{
		"schema":            `{"columns":[{"name":"id","data_type":{"type":"INTEGER"}}]}`,
		"partition_key":     `null`,
		"properties":        `null`,
		"custom_properties": `null`,
	}
	for missing := range base {
		var parts []string
		for k, v := range base {
			if k != missing {
				parts = append(parts, `"`+k+`":`+v)
			}
		}
		_, err := ParseTableDescriptor([]byte("{" + strings.Join(parts, ",") + "}"))
		if err == nil || !strings.Contains(err.Error(), missing) {
			t.Errorf("without %s: err = %v", missing, err)
		}
	}
}

func TestParseSchemaNullColumns(t *testing.T) {
	s, err := ParseSchema([]byte(`{"columns":null}`))
	if err != nil || len(s.Columns) != 0 {
		t.Fatalf("null columns: %#v, %v", s, err)
	}
	if _, err := ParseSchema([]byte(`{}`)); err == nil {
		t.Fatal("a schema without columns must be refused")
	}
}

func TestParseDatabaseDescriptorNulls(t *testing.T) {
	d, err := ParseDatabaseDescriptor([]byte(`{"comment":null,"custom_properties":null}`))
	if err != nil {
		t.Fatal(err)
	}
	if d.HasComment || d.CustomProperties == nil || len(d.CustomProperties) != 0 {
		t.Fatalf("unexpected %#v", d)
	}
	if _, err := ParseDatabaseDescriptor([]byte(`{"comment":"c"}`)); err == nil {
		t.Fatal("missing custom_properties must be refused")
	}
}

// Scalars Java reads with asInt()/asBoolean() take Jackson's NullNode values: 0 and false.
func TestParseDataTypeNullScalars(t *testing.T) {
	cases := []struct {
		js   string
		want DataType
	}{
		{`{"type":"INTEGER","nullable":null}`, DataType{Root: Int, NotNull: true}},
		{`{"type":"TIMESTAMP_WITHOUT_TIME_ZONE","precision":null}`, DataType{Root: Timestamp, Precision: 0}},
		{`{"type":"DECIMAL","precision":10,"scale":null}`, DataType{Root: Decimal, Precision: 10, Scale: 0}},
	}
	for _, c := range cases {
		got, err := ParseDataType([]byte(c.js))
		if err != nil || !got.Equal(c.want) || got.NotNull != c.want.NotNull {
			t.Errorf("%s: %v %v, want %v", c.js, got, err, c.want)
		}
	}
	// A null length reads as 0, which CHAR refuses, as Java's CHAR(0) does.
	if _, err := ParseDataType([]byte(`{"type":"CHAR","length":null}`)); err == nil {
		t.Error("CHAR with a null length accepted")
	}
	// Absent parameters are still errors.
	if _, err := ParseDataType([]byte(`{"type":"DECIMAL","precision":10}`)); err == nil {
		t.Error("DECIMAL without scale accepted")
	}
}

func TestParseSchemaNullIDs(t *testing.T) {
	s, err := ParseSchema([]byte(`{"columns":[{"name":"a","data_type":{"type":"INTEGER"},"id":null},` +
		`{"name":"r","data_type":{"type":"ROW","fields":[{"name":"x","field_type":{"type":"INTEGER"},"field_id":7}]},"id":1}]}`))
	if err != nil {
		t.Fatal(err)
	}
	if s.Columns[0].ID != 0 || s.Columns[1].ID != 1 {
		t.Fatalf("ids: %+v", s.Columns)
	}
	// A null nested field id is 0 too, which here collides with column a's id, as in Java.
	if _, err := ParseSchema([]byte(`{"columns":[{"name":"a","data_type":{"type":"INTEGER"},"id":0},` +
		`{"name":"r","data_type":{"type":"ROW","fields":[{"name":"x","field_type":{"type":"INTEGER"},"field_id":null}]},"id":1}]}`)); err == nil {
		t.Fatal("duplicate id 0 accepted")
	}
}
