package arrowlog

import (
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/apache/arrow-go/v18/arrow/ipc"
	"github.com/apache/arrow-go/v18/arrow/memory"

	"github.com/stromdb/strom/internal/record"
)

// TestPyarrowCrossCheck validates our messages with Arrow C++ (pyarrow) and decodes messages
// pyarrow writes. It runs only when ARROWLOG_PYTHON names a python with pyarrow installed.
func TestPyarrowCrossCheck(t *testing.T) {
	py := os.Getenv("ARROWLOG_PYTHON")
	if py == "" {
		t.Skip("set ARROWLOG_PYTHON to a python3 with pyarrow to run")
	}
	dir := t.TempDir()
	schema, _ := ArrowSchema(allCols)
	rows := genRows(11, allCols, 50)
	rec, err := RowsToRecord(schema, allCols, rows, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer rec.Release()
	sp := ipc.GetSchemaPayload(schema, memory.DefaultAllocator)
	meta := sp.Meta()
	if err := os.WriteFile(filepath.Join(dir, "schema.bin"), appendMessage(nil, meta.Bytes(), nil), 0o644); err != nil {
		t.Fatal(err)
	}
	meta.Release()
	sp.Release()
	for _, c := range compressions {
		msg, err := Encode(nil, rec, nil, c, 0)
		if err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(filepath.Join(dir, "go_"+c.String()+".bin"), msg, 0o644); err != nil {
			t.Fatal(err)
		}
		batch, _ := AppendBatch(nil, record.V0Header{SchemaID: 1}, rec, nil, c, 0)
		for _, proj := range [][]int{{3}, {24, 27, 28}, {0, 9, 12, 26}} {
			p, _ := NewProjection(schema, proj)
			out, err := p.AppendBatch(nil, batch)
			if err != nil {
				t.Fatal(err)
			}
			name := "go_proj_" + c.String()
			for _, i := range proj {
				name += fmt.Sprintf("-%d", i)
			}
			if err := os.WriteFile(filepath.Join(dir, name+".bin"), record.Batch(out).Records(), 0o644); err != nil {
				t.Fatal(err)
			}
		}
	}
	// Batches of an older schema (the first four columns) projected onto the full schema, with
	// all-null stand-ins for the added columns.
	oldCols := allCols[:4]
	oldSchema, _ := ArrowSchema(oldCols)
	oldRec, err := RowsToRecord(oldSchema, oldCols, genRows(5, oldCols, 21), nil)
	if err != nil {
		t.Fatal(err)
	}
	defer oldRec.Release()
	for _, c := range compressions {
		batch, _ := AppendBatch(nil, record.V0Header{SchemaID: 1}, oldRec, nil, c, 0)
		proj := []int{0, 3, 8, 9, 12, 21, 24, 25, 26, 27, 28}
		p, err := NewProjectionTo(oldSchema, schema, 2, proj)
		if err != nil {
			t.Fatal(err)
		}
		out, err := p.AppendBatch(nil, batch)
		if err != nil {
			t.Fatal(err)
		}
		name := "go_proj_evolve_" + c.String()
		for _, i := range proj {
			name += fmt.Sprintf("-%d", i)
		}
		if err := os.WriteFile(filepath.Join(dir, name+".bin"), record.Batch(out).Records(), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	out, err := exec.Command(py, "testdata/pyarrow_check.py", dir).CombinedOutput()
	if err != nil || !strings.HasSuffix(strings.TrimSpace(string(out)), "ok") {
		t.Fatalf("pyarrow: %v\n%s", err, out)
	}
	t.Logf("pyarrow:\n%s", out)
	for _, name := range []string{"py_none.bin", "py_zstd.bin", "py_lz4.bin"} {
		msg, err := os.ReadFile(filepath.Join(dir, name))
		if err != nil {
			t.Fatal(err)
		}
		_, got, err := Decode(schema, true, len(rows), msg, nil)
		if err != nil {
			t.Fatalf("%s: %v", name, err)
		}
		back, err := RecordToRows(got, allCols)
		if err != nil {
			t.Fatal(err)
		}
		assertRows(t, back, rows)
		got.Release()
	}
}
