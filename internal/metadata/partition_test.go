package metadata

import (
	"reflect"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/stromdb/strom/internal/ferr"
)

func TestNameValidation(t *testing.T) {
	valid := []string{"fluss", "a", "A-b_9", strings.Repeat("x", 200), "_x", "-"}
	invalid := map[string]string{
		"":                       "the empty string is not allowed",
		".":                      "'.' is not allowed",
		"..":                     "'..' is not allowed",
		strings.Repeat("x", 201): "is longer than the max allowed length 200",
		"a.b":                    "contains one or more characters other than ASCII alphanumerics, '_' and '-'",
		"é":                      "contains one or more characters",
		"a b":                    "contains one or more characters",
		"__internal":             "'__' is not allowed as prefix",
		strings.Repeat("é", 101): "contains one or more characters", // 101 UTF-16 units: a character error, not length
	}
	for _, n := range valid {
		if err := ValidateDatabaseName(n); err != nil {
			t.Errorf("db %q: %v", n, err)
		}
		if err := ValidateTableName(n); err != nil {
			t.Errorf("table %q: %v", n, err)
		}
	}
	for n, reason := range invalid {
		err := ValidateDatabaseName(n)
		if ferr.CodeOf(err) != ferr.InvalidDatabaseException || !strings.Contains(ferr.MessageOf(err), reason) ||
			!strings.HasPrefix(ferr.MessageOf(err), "Database name "+n+" is invalid: ") {
			t.Errorf("db %q: %v", n, err)
		}
		err = ValidateTableName(n)
		if ferr.CodeOf(err) != ferr.InvalidTableException || !strings.Contains(ferr.MessageOf(err), reason) {
			t.Errorf("table %q: %v", n, err)
		}
	}
	if ferr.CodeOf(ValidateTablePath("bad.db", "bad.table")) != ferr.InvalidDatabaseException ||
		ferr.CodeOf(ValidateTablePath("db", "bad.table")) != ferr.InvalidTableException ||
		ValidateTablePath("db", "t") != nil {
		t.Fatal("ValidateTablePath")
	}
}

func TestPartitionNames(t *testing.T) {
	if got := PartitionName([]string{"2024-01-15", "EMEA"}); got != "2024-01-15$EMEA" {
		t.Fatal(got)
	}
	if got := PartitionValues("2024-01-15$EMEA"); !reflect.DeepEqual(got, []string{"2024-01-15", "EMEA"}) {
		t.Fatal(got)
	}
	if got := QualifiedPartitionName([]string{"dt", "region"}, []string{"2024-01-15", "EMEA"}); got != "dt=2024-01-15/region=EMEA" {
		t.Fatal(got)
	}
}

func TestResolvePartitionSpec(t *testing.T) {
	keys := []string{"dt", "region"}
	vals, err := ResolvePartitionSpec("db.t", keys, map[string]string{"region": "EMEA", "dt": "2024-01-15"}, true)
	if err != nil || !reflect.DeepEqual(vals, []string{"2024-01-15", "EMEA"}) {
		t.Fatalf("%v %v", vals, err)
	}
	bad := []struct {
		spec      map[string]string
		forCreate bool
		msg       string
	}{
		{map[string]string{"dt": "x"}, true, "PartitionSpec size is not equal to partition keys size for partitioned table db.t."},
		{map[string]string{"dt": "x", "zone": "y"}, true, "does not contain partition key 'region' for partitioned table db.t"},
		{map[string]string{"dt": "2024/01", "region": "y"}, false, "The partition value 2024/01 is invalid"},
		{map[string]string{"dt": "", "region": "y"}, false, "the empty string is not allowed"},
		{map[string]string{"dt": "__historical__", "region": "y"}, true, "'__' is not allowed as prefix"},
	}
	for _, b := range bad {
		_, err := ResolvePartitionSpec("db.t", keys, b.spec, b.forCreate)
		if ferr.CodeOf(err) != ferr.PartitionSpecInvalidException || !strings.Contains(ferr.MessageOf(err), b.msg) {
			t.Errorf("%v: %v", b.spec, err)
		}
	}
	// Dropping may name reserved values; creating may not.
	if _, err := ResolvePartitionSpec("db.t", []string{"dt"}, map[string]string{"dt": "__historical__"}, false); err != nil {
		t.Fatal(err)
	}

	m, err := MatchesPartialSpec(keys, []string{"2024", "EMEA"}, map[string]string{"region": "EMEA"})
	if err != nil || !m {
		t.Fatal("partial match")
	}
	if m, _ := MatchesPartialSpec(keys, []string{"2024", "EMEA"}, map[string]string{"region": "APAC"}); m {
		t.Fatal("partial mismatch")
	}
	if _, err := MatchesPartialSpec(keys, []string{"2024", "EMEA"}, map[string]string{"zz": "1"}); ferr.CodeOf(err) != ferr.PartitionSpecInvalidException {
		t.Fatal("unknown key")
	}
}

func TestAutoPartitionTime(t *testing.T) {
	shanghai, err := time.LoadLocation("Asia/Shanghai")
	if err != nil {
		t.Skip("no tzdata")
	}
	// 2024-11-11 20:30 UTC is 2024-11-12 04:30 in Shanghai.
	now := time.Date(2024, 11, 11, 20, 30, 0, 0, time.UTC)
	cases := []struct {
		unit   TimeUnit
		offset int
		loc    *time.Location
		format string
		want   string
	}{
		{TimeUnitDay, 0, time.UTC, "", "20241111"},
		{TimeUnitDay, 0, shanghai, "", "20241112"},
		{TimeUnitDay, -7, time.UTC, "", "20241104"},
		{TimeUnitHour, 0, time.UTC, "", "2024111120"},
		{TimeUnitHour, 5, time.UTC, "", "2024111201"},
		{TimeUnitMonth, 2, time.UTC, "", "202501"},
		{TimeUnitQuarter, 0, time.UTC, "", "20244"},
		{TimeUnitQuarter, 1, time.UTC, "", "20251"},
		{TimeUnitQuarter, -4, time.UTC, "", "20234"},
		{TimeUnitYear, -1, time.UTC, "", "2023"},
		{TimeUnitDay, 1, time.UTC, "yyyy-MM-dd", "2024-11-12"},
		{TimeUnitMonth, 0, time.UTC, "yyyy'm'MM", "2024m11"},
		{TimeUnitHour, 0, shanghai, "yyyyMMdd'T'HH", "20241112T04"},
	}
	for _, c := range cases {
		got, err := AutoPartitionTime(now, c.offset, c.unit, c.format, c.loc)
		if err != nil || got != c.want {
			t.Errorf("%v%+d %q in %v: %q %v, want %q", c.unit, c.offset, c.format, c.loc, got, err, c.want)
		}
	}
	// Month arithmetic clamps to the month end, as java.time's plusMonths.
	jan31 := time.Date(2024, 1, 31, 12, 0, 0, 0, time.UTC)
	if got, _ := AutoPartitionTime(jan31, 1, TimeUnitMonth, "", time.UTC); got != "202402" {
		t.Errorf("Jan 31 + 1 month = %s", got)
	}
	if got, _ := AutoPartitionTime(jan31, -2, TimeUnitMonth, "", time.UTC); got != "202311" {
		t.Errorf("Jan 31 - 2 months = %s", got)
	}
	leap := time.Date(2024, 2, 29, 0, 0, 0, 0, time.UTC)
	if got := addMonthsClamped(leap, 12); got.Month() != time.February || got.Day() != 28 {
		t.Errorf("Feb 29 + 1 year = %v", got)
	}
}

func TestTimeFormatValidation(t *testing.T) {
	ok := map[string]TimeUnit{
		"yyyyMMdd": TimeUnitDay, "yyyy-MM-dd": TimeUnitDay, "uuuu_MM_dd": TimeUnitDay, "yyyyQ": TimeUnitQuarter,
		"yyyy'Q'q": TimeUnitQuarter, "yyyyMMddHH": TimeUnitHour, "yyyy": TimeUnitYear, "yyyyLL": TimeUnitMonth,
	}
	for f, u := range ok {
		if err := ValidateTimeFormat(f, u, time.UTC); err != nil {
			t.Errorf("%q %v: %v", f, u, err)
		}
	}
	bad := []struct {
		f   string
		u   TimeUnit
		msg string
	}{
		{"yyyyMM", TimeUnitDay, "must contain fields [year, month, day] in this order for time unit 'DAY', but found [year, month]"},
		{"ddMMyyyy", TimeUnitDay, "in this order"},
		{"yyMMdd", TimeUnitDay, "Time field 'year' in format 'yyMMdd' must have fixed width 4, but found 2."},
		{"yyyyMMdd[HH]", TimeUnitDay, "must not contain optional sections"},
		{"yyyyMMddmm", TimeUnitDay, "contains unsupported time field 'm'"},
		{"yyyy/MM/dd", TimeUnitDay, "generates invalid partition value '2024/11/11'"},
		{"'__'yyyyMMdd", TimeUnitDay, "generates invalid partition value '__20241111'"},
		{"yyyy'MMdd", TimeUnitDay, "Invalid date-time format pattern"},
		{"yyyy{MMdd", TimeUnitDay, "Invalid date-time format pattern"},
	}
	for _, b := range bad {
		err := ValidateTimeFormat(b.f, b.u, time.UTC)
		if err == nil || !strings.Contains(err.Error(), b.msg) {
			t.Errorf("%q: %v (want %q)", b.f, err, b.msg)
		}
	}
}

func TestValidPartitionTime(t *testing.T) {
	cases := []struct {
		v, f string
		ok   bool
	}{
		{"20241111", "yyyyMMdd", true},
		{"20240231", "yyyyMMdd", true}, // SMART resolution clamps the day
		{"20241311", "yyyyMMdd", false},
		{"20241100", "yyyyMMdd", false},
		{"20241132", "yyyyMMdd", false},
		{"2024111", "yyyyMMdd", false},
		{"202411111", "yyyyMMdd", false},
		{"2024111123", "yyyyMMddHH", true},
		{"2024111124", "yyyyMMddHH", false},
		{"20245", "yyyyQ", false},
		{"20244", "yyyyQ", true},
		{"2024-11-11", "yyyy-MM-dd", true},
		{"2024/11/11", "yyyy-MM-dd", false},
		{"0000", "yyyy", false},
		{"0000", "uuuu", true},
		{"abcd", "yyyy", false},
	}
	for _, c := range cases {
		if got := ValidPartitionTime(c.v, c.f); got != c.ok {
			t.Errorf("ValidPartitionTime(%q, %q) = %v", c.v, c.f, got)
		}
	}
}

func TestCheckPartitionTime(t *testing.T) {
	now := time.Date(2024, 11, 11, 10, 0, 0, 0, time.UTC)
	ap := AutoPartition{Enabled: true, TimeUnit: TimeUnitDay, NumRetention: 3, Location: time.UTC}
	keys := []string{"dt"}
	if err := ap.CheckPartitionTime(keys, []string{"20241108"}, now); err != nil {
		t.Fatal(err)
	}
	if err := ap.CheckPartitionTime(keys, []string{"20241120"}, now); err != nil {
		t.Fatal(err)
	}
	err := ap.CheckPartitionTime(keys, []string{"20241107"}, now)
	if ferr.CodeOf(err) != ferr.PartitionSpecInvalidException ||
		ferr.MessageOf(err) != "Partition value '20241107' is out-of-date. The earliest retained partition is '20241108'." {
		t.Fatalf("%v", err)
	}
	err = ap.CheckPartitionTime(keys, []string{"2024-11-11"}, now)
	if ferr.MessageOf(err) != "Partition value '2024-11-11' does not match the expected format 'yyyyMMdd' for auto-partition time unit 'DAY'." {
		t.Fatalf("%v", err)
	}
	// Disabled without a time format: anything goes. Negative retention keeps everything.
	if err := (AutoPartition{}).CheckPartitionTime(keys, []string{"x"}, now); err != nil {
		t.Fatal(err)
	}
	ap.NumRetention = -1
	if err := ap.CheckPartitionTime(keys, []string{"19700101"}, now); err != nil {
		t.Fatal(err)
	}
	// Multi-key: the configured key holds the time.
	ap = AutoPartition{Enabled: true, Key: "dt", TimeUnit: TimeUnitDay, NumRetention: 7, Location: time.UTC}
	if err := ap.CheckPartitionTime([]string{"region", "dt"}, []string{"EMEA", "20241111"}, now); err != nil {
		t.Fatal(err)
	}
}

func TestLoadTimeZone(t *testing.T) {
	if LoadTimeZone("") != time.Local || LoadTimeZone("UTC").String() != "UTC" {
		t.Fatal("basic zones")
	}
	if LoadTimeZone("No/Such_Zone") != time.UTC {
		t.Fatal("unknown zone must fall back to GMT")
	}
	for id, off := range map[string]int{"GMT+8": 8 * 3600, "GMT-05:30": -(5*3600 + 1800), "UTC+0130": 5400} {
		_, got := time.Date(2024, 1, 1, 0, 0, 0, 0, LoadTimeZone(id)).Zone()
		if got != off {
			t.Errorf("%s offset %d, want %d", id, got, off)
		}
	}
}

func TestParseFlussMemorySize(t *testing.T) {
	for in, want := range map[string]int64{
		"0": 0, "1024": 1024, "64mb": 64 << 20, "1 GB": 1 << 30, "4k": 4 << 10, "2 bytes": 2,
		"3 mebibytes": 3 << 20, " 1t ": 1 << 40,
	} {
		got, err := ParseFlussMemorySize(in)
		if err != nil || got != want {
			t.Errorf("ParseFlussMemorySize(%q) = %d, %v; want %d", in, got, err, want)
		}
	}
	for _, in := range []string{"", "mb", "-1", "1 xb", "1.5mb", "9223372036854775807kb", "99999999999999999999"} {
		if _, err := ParseFlussMemorySize(in); err == nil {
			t.Errorf("ParseFlussMemorySize(%q) succeeded, want an error", in)
		}
	}
}

// The error message's list of partition key types names exactly the roots that may key
// partitions.
func TestPartitionKeyTypeNames(t *testing.T) {
	names := strings.Split(strings.Trim(partitionKeyTypeNames, "[]"), ", ")
	var want []string
	for _, r := range TypeRoots() {
		if PartitionKeyTypeSupported(r) {
			want = append(want, r.String())
		}
	}
	slices.Sort(names)
	slices.Sort(want)
	if !slices.Equal(names, want) {
		t.Fatalf("message lists %v, table flags %v", names, want)
	}
}
