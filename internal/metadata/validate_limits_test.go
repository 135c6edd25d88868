package metadata

import (
	"strings"
	"testing"

	"github.com/stromdb/strom/internal/ferr"
)

// TestCreateTableRefusesWhatClientsCannotLoad reproduces finding 8 of issue 11: descriptors
// that Java's coordinator does not refuse but that no client can load.
func TestCreateTableRefusesWhatClientsCannotLoad(t *testing.T) {
	col := func(name string) string {
		return `{"name":"` + name + `","data_type":{"type":"INTEGER"}}`
	}
	big := strings.Repeat("x", MaxPropertyValueBytes+1)
	cases := []struct {
		name string
		js   string
		code ferr.Code
	}{
		{"zero columns", tableJSON(`[]`, "", `[]`, "", `{}`), ferr.InvalidTableException},
		{"empty column name", tableJSON(`[`+col("")+`]`, "", `[]`, "", `{}`), ferr.InvalidTableException},
		{"NUL in column name", tableJSON(`[`+col(`a\u0000b`)+`]`, "", `[]`, "", `{}`), ferr.InvalidTableException},
		{"invalid UTF-8 in column name", tableJSON(`[`+col("a\xffb")+`]`, "", `[]`, "", `{}`), ferr.InvalidTableException},
		{"newline in column name", tableJSON(`[`+col(`a\nb`)+`]`, "", `[]`, "", `{}`), ferr.InvalidTableException},
		{"huge column name", tableJSON(`[`+col(strings.Repeat("c", MaxColumnNameBytes+1))+`]`, "", `[]`, "", `{}`), ferr.InvalidTableException},
		{"empty nested field name", tableJSON(`[{"name":"r","data_type":{"type":"ROW","fields":[{"name":"","field_type":{"type":"INTEGER"}}]}}]`, "", `[]`, "", `{}`), ferr.InvalidTableException},
		{"negative field id", tableJSON(`[{"name":"a","data_type":{"type":"INTEGER"},"id":-7}]`, "", `[]`, "", `{}`), ferr.InvalidTableException},
		{"field id 2^31-1", tableJSON(`[{"name":"a","data_type":{"type":"INTEGER"},"id":2147483647}]`, "", `[]`, "", `{}`), ferr.InvalidTableException},
		{"megabyte custom property", strings.Replace(tableJSON(`[`+col("a")+`]`, "", `[]`, "", `{}`), `"owner":"me"`, `"owner":"`+big+`"`, 1), ferr.InvalidConfigException},
		{"empty custom property key", strings.Replace(tableJSON(`[`+col("a")+`]`, "", `[]`, "", `{}`), `"owner":"me"`, `"":"me"`, 1), ferr.InvalidConfigException},
	}
	for _, c := range cases {
		_, err := prepare(t, c.js, ClusterDefaults{})
		if ferr.CodeOf(err) != c.code {
			t.Errorf("%s: %v, want %s", c.name, err, c.code)
		}
	}
	// Names that are unusual but loadable stay accepted.
	for _, name := range []string{"ü", "列", "a b", "with-dash", "$x"} {
		if _, err := prepare(t, tableJSON(`[`+col(name)+`]`, "", `[]`, "", `{}`), ClusterDefaults{}); err != nil {
			t.Errorf("column %q refused: %v", name, err)
		}
	}
}

func TestDescriptorSizeLimit(t *testing.T) {
	var cols []string
	for i := 0; i < MaxDescriptorBytes/MaxColumnNameBytes+10; i++ {
		cols = append(cols, `{"name":"`+strings.Repeat("n", MaxColumnNameBytes-8)+strings.Repeat("0", 8-len(itoa(i)))+itoa(i)+`","data_type":{"type":"INTEGER"}}`)
	}
	_, err := prepare(t, tableJSON(`[`+strings.Join(cols, ",")+`]`, "", `[]`, "", `{}`), ClusterDefaults{})
	if ferr.CodeOf(err) != ferr.InvalidTableException || !strings.Contains(err.Error(), "descriptor") {
		t.Fatalf("descriptor over %d bytes: %v", MaxDescriptorBytes, err)
	}
}

func itoa(i int) string {
	const digits = "0123456789"
	if i < 10 {
		return digits[i : i+1]
	}
	return itoa(i/10) + digits[i%10:i%10+1]
}

// FuzzPrepareCreateTable: whatever CREATE_TABLE accepts satisfies the limits clients rely on
// and survives a store/load round trip; every refusal carries a Fluss error code.
func FuzzPrepareCreateTable(f *testing.F) {
	addTableSeeds(f)
	f.Add([]byte(tableJSON(`[{"name":"a\u0000","data_type":{"type":"INTEGER"}}]`, "", `[]`, "", `{}`)))
	f.Add([]byte(tableJSON(`[]`, "", `[]`, "", `{}`)))
	f.Fuzz(func(t *testing.T, data []byte) {
		d, err := ParseTableDescriptor(data)
		if err != nil {
			return
		}
		out, err := PrepareCreateTable(&d, ClusterDefaults{})
		if err != nil {
			if c := ferr.CodeOf(err); c != ferr.InvalidTableException && c != ferr.InvalidConfigException && c != ferr.BucketMaxNumException {
				t.Fatalf("refusal with code %s: %v", c, err)
			}
			return
		}
		if len(out.Schema.Columns) == 0 {
			t.Fatal("accepted a table without columns")
		}
		for _, c := range out.Schema.Columns {
			if checkName(c.Name) != "" || c.ID < 0 || c.ID > MaxFieldID {
				t.Fatalf("accepted column %q id %d", c.Name, c.ID)
			}
		}
		if len(out.JSON()) > MaxDescriptorBytes {
			t.Fatal("accepted an oversized descriptor")
		}
		if _, err := ParseTableDescriptor(out.JSON()); err != nil {
			t.Fatalf("stored descriptor does not load: %v", err)
		}
	})
}
