package rest

import (
	"context"
	"fmt"
	"net/http"

	"github.com/stromdb/strom/cmd/strom/cli"
	"github.com/stromdb/strom/fluss"
)

func tablePath(r *http.Request) fluss.TablePath {
	return fluss.NewTablePath(r.PathValue("database"), r.PathValue("table"))
}

func (g *Gateway) listTables(ctx context.Context, c *fluss.Connection, w http.ResponseWriter, r *http.Request) error {
	tables, err := c.Admin().ListTables(ctx, r.PathValue("database"))
	if err != nil {
		return err
	}
	if tables == nil {
		tables = []string{}
	}
	writeJSON(w, http.StatusOK, map[string]any{"database": r.PathValue("database"), "tables": tables})
	return nil
}

// columnJSON is a column as the API reads and writes it: the type in its SQL form
// (DataType.String, parsed back by cli.ParseType).
type columnJSON struct {
	Name    string `json:"name"`
	Type    string `json:"type"`
	Comment string `json:"comment,omitempty"`
}

type createTableBody struct {
	Name             string            `json:"name"`
	Columns          []columnJSON      `json:"columns"`
	PrimaryKey       []string          `json:"primary_key"`
	PartitionKeys    []string          `json:"partition_keys"`
	BucketKeys       []string          `json:"bucket_keys"`
	BucketCount      int32             `json:"bucket_count"`
	Comment          string            `json:"comment"`
	Properties       map[string]string `json:"properties"`
	CustomProperties map[string]string `json:"custom_properties"`
	IgnoreIfExists   bool              `json:"ignore_if_exists"`
}

func (g *Gateway) createTable(ctx context.Context, c *fluss.Connection, w http.ResponseWriter, r *http.Request) error {
	var b createTableBody
	if err := g.readJSON(w, r, &b); err != nil {
		return err
	}
	if b.Name == "" {
		return badRequest(fluss.ErrInvalidTable, `"name" is required`)
	}
	if len(b.Columns) == 0 {
		return badRequest(fluss.ErrInvalidTable, `"columns" is required: [{"name": "id", "type": "INT"}, ...]`)
	}
	cols := make([]fluss.Column, len(b.Columns))
	for i, cj := range b.Columns {
		t, err := cli.ParseType(cj.Type)
		if err != nil {
			return badRequest(fluss.ErrInvalidTable, fmt.Sprintf("column %q: %v", cj.Name, err))
		}
		cols[i] = fluss.Column{Name: cj.Name, Type: t, Comment: cj.Comment}
	}
	desc := fluss.TableDescriptor{
		Schema:        fluss.NewSchema(cols, b.PrimaryKey...),
		PartitionKeys: b.PartitionKeys, BucketKeys: b.BucketKeys, BucketCount: b.BucketCount,
		Comment: b.Comment, Properties: b.Properties, CustomProperties: b.CustomProperties,
	}
	path := fluss.NewTablePath(r.PathValue("database"), b.Name)
	if err := c.Admin().CreateTable(ctx, path, desc, b.IgnoreIfExists); err != nil {
		return err
	}
	info, err := c.Admin().GetTableInfo(ctx, path)
	if err != nil {
		return err
	}
	writeJSON(w, http.StatusCreated, tableJSON(info))
	return nil
}

func columnsJSON(cols []fluss.Column) []columnJSON {
	out := make([]columnJSON, len(cols))
	for i, c := range cols {
		out[i] = columnJSON{Name: c.Name, Type: c.Type.String(), Comment: c.Comment}
	}
	return out
}

func orEmpty(s []string) []string {
	if s == nil {
		return []string{}
	}
	return s
}

func tableJSON(info *fluss.TableInfo) map[string]any {
	comment, _ := info.Comment()
	return map[string]any{
		"database": info.Path.Database, "table": info.Path.Table,
		"table_id": info.TableID, "schema_id": info.SchemaID,
		"columns": columnsJSON(info.Schema().Columns), "primary_key": orEmpty(info.PrimaryKeys()),
		"partition_keys": orEmpty(info.PartitionKeys()), "bucket_keys": orEmpty(info.BucketKeys()),
		"bucket_count": info.NumBuckets(), "comment": comment,
		"properties": info.Properties(), "custom_properties": info.CustomProperties(),
		"created_time": info.CreatedTime, "modified_time": info.ModifiedTime,
	}
}

func (g *Gateway) getTable(ctx context.Context, c *fluss.Connection, w http.ResponseWriter, r *http.Request) error {
	info, err := c.Admin().GetTableInfo(ctx, tablePath(r))
	if err != nil {
		return err
	}
	writeJSON(w, http.StatusOK, tableJSON(info))
	return nil
}

func (g *Gateway) getSchema(ctx context.Context, c *fluss.Connection, w http.ResponseWriter, r *http.Request) error {
	id, err := intParam(r, "schema_id", -1, -1, 1<<31-1)
	if err != nil {
		return err
	}
	s, sid, err := c.Admin().GetTableSchema(ctx, tablePath(r), int32(id))
	if err != nil {
		return err
	}
	writeJSON(w, http.StatusOK, map[string]any{
		"schema_id": sid, "columns": columnsJSON(s.Columns), "primary_key": orEmpty(s.PrimaryKey),
	})
	return nil
}

func (g *Gateway) dropTable(ctx context.Context, c *fluss.Connection, w http.ResponseWriter, r *http.Request) error {
	ignore, err := boolParam(r, "ignore_if_not_exists")
	if err != nil {
		return err
	}
	if err := c.Admin().DropTable(ctx, tablePath(r), ignore); err != nil {
		return err
	}
	w.WriteHeader(http.StatusNoContent)
	return nil
}

func (g *Gateway) listPartitions(ctx context.Context, c *fluss.Connection, w http.ResponseWriter, r *http.Request) error {
	parts, err := c.Admin().ListPartitionInfos(ctx, tablePath(r), nil)
	if err != nil {
		return err
	}
	out := make([]map[string]any, len(parts))
	for i, p := range parts {
		out[i] = map[string]any{"partition_id": p.ID, "partition": p.Name, "spec": p.Spec}
	}
	writeJSON(w, http.StatusOK, map[string]any{"partitions": out})
	return nil
}
