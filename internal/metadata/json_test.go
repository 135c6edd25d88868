package metadata

import (
	"encoding/json"
	"errors"
	"reflect"
	"strings"
	"testing"

	"github.com/stromdb/strom/internal/ferr"
)

func ptr(t DataType) *DataType { return &t }

// allTypes covers every root, nullability, parameters and nesting.
func allTypes() []DataType {
	return []DataType{
		{Root: Boolean},
		{Root: TinyInt},
		{Root: SmallInt},
		{Root: Int, NotNull: true},
		{Root: BigInt},
		{Root: Float},
		{Root: Double},
		{Root: Char, Length: 10},
		{Root: String},
		{Root: Binary, Length: 16, NotNull: true},
		{Root: Bytes},
		{Root: Decimal, Precision: 10, Scale: 2},
		{Root: Decimal, Precision: 38, Scale: 38},
		{Root: Date},
		{Root: Time, Precision: 0},
		{Root: Time, Precision: 9},
		{Root: Timestamp, Precision: 6},
		{Root: TimestampLTZ, Precision: 3, NotNull: true},
		{Root: Array, Elem: ptr(DataType{Root: Int, NotNull: true})},
		{Root: Map, Elem: ptr(DataType{Root: String, NotNull: true}), Value: ptr(DataType{Root: Array, Elem: ptr(DataType{Root: Double})})},
		{Root: Row, Fields: []Field{
			{Name: "x", Type: DataType{Root: Int}, ID: 5},
			{Name: "y", Type: DataType{Root: Row, Fields: []Field{{Name: "z", Type: DataType{Root: String}, Description: "inner \"z\"", ID: 7}}}, ID: 6},
		}},
		{Root: Array, NotNull: true, Elem: ptr(DataType{Root: Row, Fields: []Field{{Name: "a", Type: DataType{Root: Bytes}, ID: 1}}})},
	}
}

func TestDataTypeRoundTrip(t *testing.T) {
	for _, dt := range allTypes() {
		t.Run(dt.String(), func(t *testing.T) {
			js := DataTypeJSON(dt)
			if !json.Valid(js) {
				t.Fatalf("invalid JSON %s", js)
			}
			got, err := ParseDataType(js)
			if err != nil {
				t.Fatalf("ParseDataType(%s): %v", js, err)
			}
			if !got.Equal(dt) || !reflect.DeepEqual(got, dt) {
				t.Fatalf("round trip of %s:\n got %#v\nwant %#v", js, got, dt)
			}
		})
	}
}

func TestDataTypeJSONVectors(t *testing.T) {
	cases := []struct {
		dt   DataType
		want string
	}{
		{DataType{Root: Int, NotNull: true}, `{"type":"INTEGER","nullable":false}`},
		{DataType{Root: String}, `{"type":"STRING"}`},
		{DataType{Root: Decimal, Precision: 10, Scale: 2}, `{"type":"DECIMAL","precision":10,"scale":2}`},
		{DataType{Root: Char, Length: 3}, `{"type":"CHAR","length":3}`},
		{DataType{Root: TimestampLTZ, Precision: 6}, `{"type":"TIMESTAMP_WITH_LOCAL_TIME_ZONE","precision":6}`},
		{DataType{Root: Time, Precision: 0}, `{"type":"TIME_WITHOUT_TIME_ZONE","precision":0}`},
		{DataType{Root: Map, Elem: ptr(DataType{Root: String, NotNull: true}), Value: ptr(DataType{Root: BigInt})},
			`{"type":"MAP","key_type":{"type":"STRING","nullable":false},"value_type":{"type":"BIGINT"}}`},
		{DataType{Root: Row, Fields: []Field{{Name: "f", Type: DataType{Root: Int}, Description: "d", ID: 3}}},
			`{"type":"ROW","fields":[{"name":"f","field_type":{"type":"INTEGER"},"description":"d","field_id":3}]}`},
	}
	for _, c := range cases {
		if got := string(DataTypeJSON(c.dt)); got != c.want {
			t.Errorf("DataTypeJSON(%s) = %s, want %s", c.dt, got, c.want)
		}
	}
}

func TestDataTypeString(t *testing.T) {
	cases := map[string]DataType{
		"INT NOT NULL":                 {Root: Int, NotNull: true},
		"DECIMAL(10, 2)":               {Root: Decimal, Precision: 10, Scale: 2},
		"TIMESTAMP_LTZ(6)":             {Root: TimestampLTZ, Precision: 6},
		"TIMESTAMP(3) NOT NULL":        {Root: Timestamp, Precision: 3, NotNull: true},
		"ARRAY<STRING NOT NULL>":       {Root: Array, Elem: ptr(DataType{Root: String, NotNull: true})},
		"MAP<INT, BYTES>":              {Root: Map, Elem: ptr(DataType{Root: Int}), Value: ptr(DataType{Root: Bytes})},
		"ROW<`a` INT, `b``c` CHAR(2)>": {Root: Row, Fields: []Field{{Name: "a", Type: DataType{Root: Int}}, {Name: "b`c", Type: DataType{Root: Char, Length: 2}}}},
	}
	for want, dt := range cases {
		if got := dt.String(); got != want {
			t.Errorf("String() = %q, want %q", got, want)
		}
	}
}

func TestParseDataTypeErrors(t *testing.T) {
	bad := []string{
		``, `[]`, `{}`, `{"type":5}`, `{"type":"VARCHAR"}`, `{"type":"INTEGER","nullable":"false"}`,
		`{"type":"CHAR"}`, `{"type":"CHAR","length":0}`, `{"type":"BINARY","length":3000000000}`,
		`{"type":"DECIMAL","precision":10}`, `{"type":"DECIMAL","precision":39,"scale":0}`,
		`{"type":"DECIMAL","precision":5,"scale":6}`, `{"type":"TIME_WITHOUT_TIME_ZONE"}`,
		`{"type":"TIMESTAMP_WITHOUT_TIME_ZONE","precision":10}`, `{"type":"ARRAY"}`,
		`{"type":"ARRAY","element_type":"INT"}`, `{"type":"MAP","key_type":{"type":"INTEGER"}}`,
		`{"type":"ROW"}`, `{"type":"ROW","fields":[{"name":"a"}]}`, `{"type":"ROW","fields":[1]}`,
		`{"type":"ROW","fields":[{"name":"a","field_type":{"type":"INTEGER"}},{"name":"a","field_type":{"type":"INTEGER"}}]}`,
		`{"type":"DECIMAL","precision":1.5,"scale":0}`, `{"type":"INTEGER"} x`, `{"type":"INTEGER"}}`,
		strings.Repeat(`{"type":"ARRAY","element_type":`, 100) + `{"type":"INTEGER"}` + strings.Repeat(`}`, 100),
	}
	for _, s := range bad {
		if _, err := ParseDataType([]byte(s)); err == nil {
			t.Errorf("ParseDataType(%.80s) succeeded", s)
		}
	}
}

// pyflussCreateTable is the table_json the Rust client (pyfluss 1.0) sends for the official
// test_create_table: serde_json without preserve_order sorts keys; the schema builder assigns
// ids 0.. and makes primary-key columns NOT NULL; log_format/kv_format are written as
// upper-case properties.
const pyflussCreateTable = `{"bucket_count":3,"bucket_key":["id"],"comment":"Test table for user data (id, name, age, email)",` +
	`"custom_properties":{},"partition_key":[],"properties":{"table.kv.format":"INDEXED","table.log.format":"ARROW",` +
	`"table.replication.factor":"1"},"schema":{"columns":[{"data_type":{"nullable":false,"type":"INTEGER"},"id":0,"name":"id"},` +
	`{"data_type":{"type":"STRING"},"id":1,"name":"name"},{"data_type":{"type":"INTEGER"},"id":2,"name":"age"},` +
	`{"data_type":{"type":"STRING"},"id":3,"name":"email"}],"highest_field_id":3,"primary_key":["id"],"version":1},"version":1}`

// formatsExample is the example of docs/encodings.md §13 as a Java client sends it.
const formatsExample = `{
  "version": 1,
  "schema": {
    "version": 1,
    "columns": [
      {"name": "id",   "data_type": {"type": "INTEGER", "nullable": false}, "id": 0},
      {"name": "name", "data_type": {"type": "STRING"},                      "id": 1},
      {"name": "age",  "data_type": {"type": "BIGINT"},                      "id": 2}
    ],
    "primary_key": ["id"],
    "highest_field_id": 2
  },
  "partition_key": [],
  "bucket_key": ["id"],
  "bucket_count": 3,
  "properties": {},
  "custom_properties": {}
}`

func TestParsePyflussCreateTable(t *testing.T) {
	d, err := ParseTableDescriptor([]byte(pyflussCreateTable))
	if err != nil {
		t.Fatal(err)
	}
	want := TableDescriptor{
		Schema: Schema{
			Columns: []Column{
				{Name: "id", Type: DataType{Root: Int, NotNull: true}, ID: 0},
				{Name: "name", Type: DataType{Root: String}, ID: 1},
				{Name: "age", Type: DataType{Root: Int}, ID: 2},
				{Name: "email", Type: DataType{Root: String}, ID: 3},
			},
			PrimaryKey:     []string{"id"},
			HighestFieldID: 3,
		},
		Comment:          "Test table for user data (id, name, age, email)",
		HasComment:       true,
		PartitionKeys:    []string{},
		BucketKeys:       []string{"id"},
		BucketCount:      3,
		Properties:       map[string]string{"table.kv.format": "INDEXED", "table.log.format": "ARROW", "table.replication.factor": "1"},
		CustomProperties: map[string]string{},
	}
	if !reflect.DeepEqual(d, want) {
		t.Fatalf("got  %#v\nwant %#v", d, want)
	}
	if d.Properties.LogFormat() != LogFormatArrow || d.Properties.KvFormat() != KvFormatIndexed || d.Properties.ReplicationFactor() != 1 {
		t.Fatalf("accessors: %v %v %v", d.Properties.LogFormat(), d.Properties.KvFormat(), d.Properties.ReplicationFactor())
	}
}

func TestParseFormatsExample(t *testing.T) {
	d, err := ParseTableDescriptor([]byte(formatsExample))
	if err != nil {
		t.Fatal(err)
	}
	if d.BucketCount != 3 || !reflect.DeepEqual(d.BucketKeys, []string{"id"}) || d.Schema.HighestFieldID != 2 ||
		!d.HasPrimaryKey() || d.HasComment || len(d.Schema.Columns) != 3 || d.Schema.Columns[2].Type.Root != BigInt {
		t.Fatalf("unexpected %#v", d)
	}
	want := `{"version":1,"schema":{"version":1,"columns":[{"name":"id","data_type":{"type":"INTEGER","nullable":false},"id":0},` +
		`{"name":"name","data_type":{"type":"STRING"},"id":1},{"name":"age","data_type":{"type":"BIGINT"},"id":2}],` +
		`"primary_key":["id"],"highest_field_id":2},"partition_key":[],"bucket_key":["id"],"bucket_count":3,` +
		`"properties":{},"custom_properties":{}}`
	if got := string(d.JSON()); got != want {
		t.Fatalf("JSON()\n got %s\nwant %s", got, want)
	}
}

// checkRustParsable applies the requirements of fluss-rust's json_serde.rs and table.rs to a
// table JSON the server returns: required keys and their JSON kinds, string property values,
// column and nested ids assigned, and a bucket count (TableInfo unwraps the distribution).
func checkRustParsable(t *testing.T, js []byte) {
	t.Helper()
	var root map[string]any
	if err := json.Unmarshal(js, &root); err != nil {
		t.Fatalf("not JSON: %v", err)
	}
	for _, k := range []string{"schema", "partition_key", "properties", "custom_properties", "bucket_count", "bucket_key"} {
		if _, ok := root[k]; !ok {
			t.Fatalf("missing %q in %s", k, js)
		}
	}
	if n, ok := root["bucket_count"].(float64); !ok || n <= 0 {
		t.Fatalf("bucket_count %v", root["bucket_count"])
	}
	for _, k := range []string{"properties", "custom_properties"} {
		for pk, pv := range root[k].(map[string]any) {
			if _, ok := pv.(string); !ok {
				t.Fatalf("%s[%s] is %T", k, pk, pv)
			}
		}
	}
	if _, ok := root["partition_key"].([]any); !ok {
		t.Fatalf("partition_key not an array")
	}
	schema := root["schema"].(map[string]any)
	var walk func(dt map[string]any)
	walk = func(dt map[string]any) {
		if _, ok := dt["type"].(string); !ok {
			t.Fatalf("data type without type: %v", dt)
		}
		switch dt["type"] {
		case "CHAR":
			if _, ok := dt["length"]; !ok {
				t.Fatalf("CHAR without length")
			}
		case "DECIMAL":
			if _, ok := dt["precision"]; !ok {
				t.Fatalf("DECIMAL without precision")
			}
		case "ARRAY":
			walk(dt["element_type"].(map[string]any))
		case "MAP":
			walk(dt["key_type"].(map[string]any))
			walk(dt["value_type"].(map[string]any))
		case "ROW":
			for _, f := range dt["fields"].([]any) {
				fo := f.(map[string]any)
				if id, ok := fo["field_id"].(float64); !ok || id < 0 {
					t.Fatalf("nested field without id: %v", fo)
				}
				walk(fo["field_type"].(map[string]any))
			}
		}
	}
	for _, c := range schema["columns"].([]any) {
		co := c.(map[string]any)
		if _, ok := co["name"].(string); !ok {
			t.Fatalf("column without name")
		}
		if id, ok := co["id"].(float64); !ok || id < 0 {
			t.Fatalf("column without id: %v", co)
		}
		walk(co["data_type"].(map[string]any))
	}
}

func TestTableDescriptorRoundTrip(t *testing.T) {
	cols := []Column{{Name: "pk", Type: DataType{Root: BigInt}}}
	for i, dt := range allTypes() {
		cols = append(cols, Column{Name: "c" + string(rune('a'+i)), Type: dt, Comment: "col " + dt.String()})
	}
	d := TableDescriptor{
		Schema:           Schema{Columns: cols, PrimaryKey: []string{"pk"}},
		Comment:          "tricky \"comment\"\n\u2028 é",
		HasComment:       true,
		PartitionKeys:    []string{},
		BucketCount:      4,
		Properties:       map[string]string{PropLogTTL: "1d"},
		CustomProperties: map[string]string{"owner": "x\ty"},
	}
	d.Schema.AssignFieldIDs()
	if err := d.Schema.Normalize(true); err != nil {
		t.Fatal(err)
	}
	if err := d.Normalize(); err != nil {
		t.Fatal(err)
	}
	js := d.JSON()
	checkRustParsable(t, js)
	got, err := ParseTableDescriptor(js)
	if err != nil {
		t.Fatalf("%v\n%s", err, js)
	}
	if !reflect.DeepEqual(got, d) {
		t.Fatalf("round trip:\n got %#v\nwant %#v", got, d)
	}
	if string(got.JSON()) != string(js) {
		t.Fatalf("JSON not stable")
	}
}

func TestSchemaIDAssignment(t *testing.T) {
	// No ids at all (legacy JSON, or a client that leaves them out): pre-order assignment
	// including nested ROW fields inside ARRAY/MAP/ROW.
	js := `{"version":1,"columns":[
		{"name":"a","data_type":{"type":"INTEGER"}},
		{"name":"b","data_type":{"type":"ROW","fields":[{"name":"x","field_type":{"type":"INTEGER"}},{"name":"y","field_type":{"type":"STRING"}}]}},
		{"name":"c","data_type":{"type":"ARRAY","element_type":{"type":"ROW","fields":[{"name":"n","field_type":{"type":"ROW","fields":[{"name":"m","field_type":{"type":"INTEGER"}}]}}]}}},
		{"name":"d","data_type":{"type":"INTEGER"}}]}`
	s, err := ParseSchema([]byte(js))
	if err != nil {
		t.Fatal(err)
	}
	var ids []int32
	for i := range s.Columns {
		ids = append(ids, s.Columns[i].ID)
		ids = collectFieldIDs(&s.Columns[i].Type, ids)
	}
	// a=0, b=1 (x=2, y=3), c=4 (n=5 (m=6)), d=7
	if want := []int32{0, 1, 2, 3, 4, 5, 6, 7}; !reflect.DeepEqual(ids, want) || s.HighestFieldID != 7 {
		t.Fatalf("ids %v highest %d", ids, s.HighestFieldID)
	}
	if s.Columns[0].ID != 0 || s.Columns[3].ID != 7 {
		t.Fatalf("column ids %v", ids)
	}

	// Ids present are kept, including gaps; highest_field_id may exceed the maximum.
	js = `{"columns":[{"name":"a","data_type":{"type":"INTEGER"},"id":3},
		{"name":"b","data_type":{"type":"ROW","fields":[{"name":"x","field_type":{"type":"INTEGER"},"field_id":9}]},"id":7}],
		"highest_field_id":12}`
	if s, err = ParseSchema([]byte(js)); err != nil {
		t.Fatal(err)
	}
	if s.Columns[0].ID != 3 || s.Columns[1].ID != 7 || s.Columns[1].Type.Fields[0].ID != 9 || s.HighestFieldID != 12 {
		t.Fatalf("kept ids: %#v", s)
	}

	// Column ids present but a nested id missing: the nested field gets a fresh id.
	js = `{"columns":[{"name":"a","data_type":{"type":"INTEGER"},"id":0},
		{"name":"b","data_type":{"type":"ROW","fields":[{"name":"x","field_type":{"type":"INTEGER"}}]},"id":1}]}`
	if s, err = ParseSchema([]byte(js)); err != nil {
		t.Fatal(err)
	}
	if s.Columns[1].Type.Fields[0].ID != 2 || s.HighestFieldID != 2 {
		t.Fatalf("nested fill: %#v", s)
	}
}

func TestParseSchemaPrimaryKeyNotNull(t *testing.T) {
	s, err := ParseSchema([]byte(`{"version":1,"columns":[{"name":"k","data_type":{"type":"STRING"},"id":0},
		{"name":"v","data_type":{"type":"INTEGER"},"comment":"value","id":1}],"primary_key":["k"],"highest_field_id":1}`))
	if err != nil {
		t.Fatal(err)
	}
	if !s.Columns[0].Type.NotNull || s.Columns[1].Type.NotNull || s.Columns[1].Comment != "value" {
		t.Fatalf("%#v", s)
	}
	if got := s.PrimaryKeyIndexes(); !reflect.DeepEqual(got, []int{0}) {
		t.Fatalf("PrimaryKeyIndexes %v", got)
	}
	if s.ColumnIndex("v") != 1 || s.ColumnIndex("nope") != -1 {
		t.Fatal("ColumnIndex")
	}
	want := `{"version":1,"columns":[{"name":"k","data_type":{"type":"STRING","nullable":false},"id":0},` +
		`{"name":"v","data_type":{"type":"INTEGER"},"comment":"value","id":1}],"primary_key":["k"],"highest_field_id":1}`
	if got := string(SchemaJSON(s)); got != want {
		t.Fatalf("SchemaJSON\n got %s\nwant %s", got, want)
	}
}

func TestAggFunctionJSON(t *testing.T) {
	js := `{"columns":[{"name":"k","data_type":{"type":"INTEGER"},"id":0},
		{"name":"s","data_type":{"type":"STRING"},"agg_function":{"type":"LISTAGG","parameters":{"delimiter":";"}},"id":1},
		{"name":"n","data_type":{"type":"BIGINT"},"agg_function":{"type":"last-value-ignore-nulls"},"id":2},
		{"name":"u","data_type":{"type":"BIGINT"},"agg_function":{"type":"no_such_fn"},"id":3}],
		"primary_key":["k"],"highest_field_id":3}`
	s, err := ParseSchema([]byte(js))
	if err != nil {
		t.Fatal(err)
	}
	if a := s.Columns[1].AggFunction; a == nil || a.Type != AggListAgg || a.Parameters["delimiter"] != ";" {
		t.Fatalf("listagg: %#v", a)
	}
	if a := s.Columns[2].AggFunction; a == nil || a.Type != AggLastValueIgnoreNulls || a.Parameters != nil {
		t.Fatalf("last_value_ignore_nulls: %#v", a)
	}
	if s.Columns[3].AggFunction != nil {
		t.Fatalf("unknown function kept: %#v", s.Columns[3].AggFunction)
	}
	out := string(SchemaJSON(s))
	if !strings.Contains(out, `"agg_function":{"type":"listagg","parameters":{"delimiter":";"}},"id":1`) ||
		!strings.Contains(out, `"agg_function":{"type":"last_value_ignore_nulls"},"id":2`) {
		t.Fatalf("agg JSON: %s", out)
	}
}

func TestParseTableDescriptorErrors(t *testing.T) {
	base := func(mut func(m map[string]any)) string {
		var m map[string]any
		_ = json.Unmarshal([]byte(formatsExample), &m)
		mut(m)
		b, _ := json.Marshal(m)
		return string(b)
	}
	schemaWith := func(cols string, extra string) func(m map[string]any) {
		return func(m map[string]any) {
			var s map[string]any
			_ = json.Unmarshal([]byte(`{"columns":`+cols+extra+`}`), &s)
			m["schema"] = s
		}
	}
	cols := `[{"name":"id","data_type":{"type":"INTEGER"},"id":0},{"name":"p","data_type":{"type":"STRING"},"id":1}]`
	cases := map[string]string{
		"not json":                 `{"version":1`,
		"array":                    `[1]`,
		"no schema":                base(func(m map[string]any) { delete(m, "schema") }),
		"no partition_key":         base(func(m map[string]any) { delete(m, "partition_key") }),
		"no properties":            base(func(m map[string]any) { delete(m, "properties") }),
		"no custom_properties":     base(func(m map[string]any) { delete(m, "custom_properties") }),
		"properties not object":    base(func(m map[string]any) { m["properties"] = []any{} }),
		"property value object":    base(func(m map[string]any) { m["properties"] = map[string]any{"a": map[string]any{}} }),
		"bucket_count string":      base(func(m map[string]any) { m["bucket_count"] = "3" }),
		"bucket_count zero":        base(func(m map[string]any) { m["bucket_count"] = 0 }),
		"bucket_key not strings":   base(func(m map[string]any) { m["bucket_key"] = []any{1} }),
		"comment number":           base(func(m map[string]any) { m["comment"] = 5 }),
		"duplicate column":         base(schemaWith(`[{"name":"id","data_type":{"type":"INTEGER"}},{"name":"id","data_type":{"type":"INTEGER"}}]`, `,"primary_key":["id"]`)),
		"mixed ids":                base(schemaWith(`[{"name":"id","data_type":{"type":"INTEGER"},"id":0},{"name":"x","data_type":{"type":"INTEGER"}}]`, `,"primary_key":["id"]`)),
		"duplicate ids":            base(schemaWith(`[{"name":"id","data_type":{"type":"INTEGER"},"id":1},{"name":"x","data_type":{"type":"INTEGER"},"id":1}]`, `,"primary_key":["id"]`)),
		"negative id":              base(schemaWith(`[{"name":"id","data_type":{"type":"INTEGER"},"id":-5}]`, `,"primary_key":["id"]`)),
		"highest too low":          base(schemaWith(cols, `,"primary_key":["id"],"highest_field_id":0`)),
		"pk missing column":        base(schemaWith(cols, `,"primary_key":["nope"]`)),
		"pk empty":                 base(schemaWith(cols, `,"primary_key":[]`)),
		"pk duplicate":             base(schemaWith(cols, `,"primary_key":["id","id"]`)),
		"auto inc on log table":    base(schemaWith(cols, `,"auto_increment_column":["id"]`)),
		"auto inc is pk":           base(schemaWith(cols, `,"primary_key":["id"],"auto_increment_column":["id"]`)),
		"auto inc wrong type":      base(schemaWith(cols, `,"primary_key":["id"],"auto_increment_column":["p"]`)),
		"agg on pk":                base(schemaWith(`[{"name":"id","data_type":{"type":"INTEGER"},"agg_function":{"type":"sum"}}]`, `,"primary_key":["id"]`)),
		"bucket key is partition":  base(func(m map[string]any) { m["partition_key"] = []any{"id"}; m["bucket_key"] = []any{"id"} }),
		"bucket key not in pk":     base(func(m map[string]any) { m["bucket_key"] = []any{"name"} }),
		"partition key not in pk":  base(func(m map[string]any) { m["partition_key"] = []any{"name"}; m["bucket_key"] = []any{} }),
		"pk equals partition keys": base(func(m map[string]any) { m["partition_key"] = []any{"id"}; m["bucket_key"] = []any{} }),
		"log bucket key missing":   base(func(m map[string]any) { schemaWith(cols, ``)(m); m["bucket_key"] = []any{"zz"} }),
	}
	cases["log partition key missing"] = base(func(m map[string]any) {
		schemaWith(cols, ``)(m)
		m["partition_key"] = []any{"zz"}
		m["bucket_key"] = []any{}
	})
	for name, js := range cases {
		t.Run(name, func(t *testing.T) {
			_, err := ParseTableDescriptor([]byte(js))
			if err == nil {
				t.Fatalf("accepted %s", js)
			}
			var fe *ferr.Error
			if !errors.As(err, &fe) || fe.Code != ferr.InvalidTableException {
				t.Fatalf("error %v is not INVALID_TABLE_EXCEPTION", err)
			}
		})
	}
}

func TestParseTableDescriptorNormalisation(t *testing.T) {
	// A PK table without bucket keys gets PK minus partition keys; partitioned log table
	// without distribution keeps none; PK columns turn NOT NULL.
	js := `{"version":1,"schema":{"version":1,"columns":[{"name":"dt","data_type":{"type":"STRING"},"id":0},
		{"name":"id","data_type":{"type":"INTEGER"},"id":1},{"name":"v","data_type":{"type":"STRING"},"id":2}],
		"primary_key":["dt","id"],"highest_field_id":2},"partition_key":["dt"],"properties":{},"custom_properties":{}}`
	d, err := ParseTableDescriptor([]byte(js))
	if err != nil {
		t.Fatal(err)
	}
	if !reflect.DeepEqual(d.BucketKeys, []string{"id"}) || d.BucketCount != 0 {
		t.Fatalf("bucket keys %v count %d", d.BucketKeys, d.BucketCount)
	}
	if !reflect.DeepEqual(d.PhysicalPrimaryKey(), []string{"id"}) || !d.IsDefaultBucketKey() || !d.IsPartitioned() {
		t.Fatalf("helpers")
	}
	if !reflect.DeepEqual(d.BucketKeyIndexes(), []int{1}) || !reflect.DeepEqual(d.PartitionKeyIndexes(), []int{0}) {
		t.Fatalf("indexes")
	}
}

func TestDatabaseDescriptorJSON(t *testing.T) {
	d, err := ParseDatabaseDescriptor([]byte(`{"comment":"test_db","custom_properties":{"k1":"v1","k2":"v2"},"version":1}`))
	if err != nil {
		t.Fatal(err)
	}
	if !d.HasComment || d.Comment != "test_db" || !reflect.DeepEqual(d.CustomProperties, map[string]string{"k1": "v1", "k2": "v2"}) {
		t.Fatalf("%#v", d)
	}
	if got, want := string(d.JSON()), `{"version":1,"comment":"test_db","custom_properties":{"k1":"v1","k2":"v2"}}`; got != want {
		t.Fatalf("JSON %s, want %s", got, want)
	}
	empty, err := ParseDatabaseDescriptor(nil)
	if err != nil || empty.HasComment || empty.CustomProperties == nil {
		t.Fatalf("empty: %#v %v", empty, err)
	}
	if got := string(empty.JSON()); got != `{"version":1,"custom_properties":{}}` {
		t.Fatalf("empty JSON %s", got)
	}
	for _, bad := range []string{`{}`, `{"custom_properties":[]}`, `{"comment":1,"custom_properties":{}}`, `nope`} {
		_, err := ParseDatabaseDescriptor([]byte(bad))
		if ferr.CodeOf(err) != ferr.InvalidDatabaseException {
			t.Errorf("%s: %v", bad, err)
		}
	}
}

func TestAppendJSONString(t *testing.T) {
	for _, s := range []string{"", "plain", "q\"b\\", "\x00\x1f\n\r\t", "é😀", "\u2028\u2029", "bad\xffutf8"} {
		out := appendJSONString(nil, s)
		var back string
		if err := json.Unmarshal(out, &back); err != nil {
			t.Fatalf("%q → %s: %v", s, out, err)
		}
		want := strings.ToValidUTF8(s, "\uFFFD")
		if back != want {
			t.Fatalf("%q → %s → %q", s, out, back)
		}
	}
}

func TestJavaSchemaWithAutoIncrement(t *testing.T) {
	// As the Java client writes it: key order of SchemaJsonSerde, auto_increment_column list.
	js := `{"version":1,"columns":[{"name":"k","data_type":{"type":"STRING","nullable":false},"id":0},` +
		`{"name":"seq","data_type":{"type":"BIGINT"},"id":1}],"primary_key":["k"],"auto_increment_column":["seq"],"highest_field_id":1}`
	s, err := ParseSchema([]byte(js))
	if err != nil {
		t.Fatal(err)
	}
	if !reflect.DeepEqual(s.AutoIncrement, []string{"seq"}) {
		t.Fatalf("%#v", s)
	}
	if got := string(SchemaJSON(s)); got != js {
		t.Fatalf("re-encoded\n got %s\nwant %s", got, js)
	}
	if _, err := ParseSchema([]byte(strings.Replace(js, `["seq"]`, `["seq","k"]`, 1))); err == nil {
		t.Fatal("two auto-increment columns accepted")
	}
}
