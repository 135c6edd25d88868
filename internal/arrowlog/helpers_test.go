package arrowlog

import (
	"bufio"
	"encoding/hex"
	"os"
	"strings"
	"testing"

	"github.com/stromdb/strom/internal/metadata"
	"github.com/stromdb/strom/internal/row"
)

// readHex loads a testdata file of whitespace-separated hex bytes; lines starting with # are
// comments.
func readHex(t testing.TB, name string) []byte {
	t.Helper()
	f, err := os.Open("testdata/" + name)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	var sb strings.Builder
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		line := strings.TrimSpace(sc.Text())
		if line == "" || strings.HasPrefix(line, "#") {
			continue
		}
		sb.WriteString(strings.ReplaceAll(line, " ", ""))
	}
	b, err := hex.DecodeString(sb.String())
	if err != nil {
		t.Fatal(err)
	}
	return b
}

// appendixCols is the Appendix A table: id INT NOT NULL, name STRING, age BIGINT.
var appendixCols = []metadata.Column{
	{Name: "id", Type: metadata.DataType{Root: metadata.Int, NotNull: true}},
	{Name: "name", Type: metadata.DataType{Root: metadata.String}},
	{Name: "age", Type: metadata.DataType{Root: metadata.BigInt}},
}

func i64(v int64) row.Datum  { return row.Datum{I: v} }
func str(s string) row.Datum { return row.Datum{B: []byte(s)} }

var null = row.NullDatum
