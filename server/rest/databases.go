package rest

import (
	"context"
	"net/http"
	"strconv"

	"github.com/stromdb/strom/fluss"
)

func (g *Gateway) listDatabases(ctx context.Context, c *fluss.Connection, w http.ResponseWriter, r *http.Request) error {
	dbs, err := c.Admin().ListDatabases(ctx)
	if err != nil {
		return err
	}
	if dbs == nil {
		dbs = []string{}
	}
	writeJSON(w, http.StatusOK, map[string]any{"databases": dbs})
	return nil
}

type createDatabaseBody struct {
	Name           string            `json:"name"`
	Comment        string            `json:"comment"`
	Properties     map[string]string `json:"custom_properties"`
	IgnoreIfExists bool              `json:"ignore_if_exists"`
}

func (g *Gateway) createDatabase(ctx context.Context, c *fluss.Connection, w http.ResponseWriter, r *http.Request) error {
	var b createDatabaseBody
	if err := g.readJSON(w, r, &b); err != nil {
		return err
	}
	if b.Name == "" {
		return badRequest(fluss.ErrInvalidDatabase, `"name" is required`)
	}
	desc := &fluss.DatabaseDescriptor{Comment: b.Comment, CustomProperties: b.Properties}
	if err := c.Admin().CreateDatabase(ctx, b.Name, desc, b.IgnoreIfExists); err != nil {
		return err
	}
	writeJSON(w, http.StatusCreated, map[string]any{"database": b.Name})
	return nil
}

func (g *Gateway) getDatabase(ctx context.Context, c *fluss.Connection, w http.ResponseWriter, r *http.Request) error {
	name := r.PathValue("database")
	info, err := c.Admin().GetDatabaseInfo(ctx, name)
	if err != nil {
		return err
	}
	tables, err := c.Admin().ListTables(ctx, name)
	if err != nil {
		return err
	}
	if tables == nil {
		tables = []string{}
	}
	writeJSON(w, http.StatusOK, map[string]any{
		"database": name, "comment": info.Descriptor.Comment, "custom_properties": info.Descriptor.CustomProperties,
		"created_time": info.CreatedTime, "modified_time": info.ModifiedTime, "tables": tables,
	})
	return nil
}

func (g *Gateway) dropDatabase(ctx context.Context, c *fluss.Connection, w http.ResponseWriter, r *http.Request) error {
	cascade, err := boolParam(r, "cascade")
	if err != nil {
		return err
	}
	ignore, err := boolParam(r, "ignore_if_not_exists")
	if err != nil {
		return err
	}
	if err := c.Admin().DropDatabase(ctx, r.PathValue("database"), ignore, cascade); err != nil {
		return err
	}
	w.WriteHeader(http.StatusNoContent)
	return nil
}

// boolParam reads an optional boolean query parameter (absent: false).
func boolParam(r *http.Request, name string) (bool, error) {
	s := r.URL.Query().Get(name)
	if s == "" {
		return false, nil
	}
	v, err := strconv.ParseBool(s)
	if err != nil {
		return false, badRequest(fluss.ErrInvalidConfig, "query parameter "+name+"="+strconv.Quote(s)+": want true or false")
	}
	return v, nil
}

// intParam reads an optional integer query parameter in [lo, hi] (absent: def).
func intParam(r *http.Request, name string, def, lo, hi int64) (int64, error) {
	s := r.URL.Query().Get(name)
	if s == "" {
		return def, nil
	}
	v, err := strconv.ParseInt(s, 10, 64)
	if err != nil || v < lo || v > hi {
		return 0, badRequest(fluss.ErrInvalidConfig, "query parameter "+name+"="+strconv.Quote(s)+": want an integer from "+
			strconv.FormatInt(lo, 10)+" to "+strconv.FormatInt(hi, 10))
	}
	return v, nil
}
