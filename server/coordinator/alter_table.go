package coordinator

import (
	"context"
	"encoding/json"
	"fmt"

	"google.golang.org/protobuf/proto"

	"github.com/stromdb/strom/internal/ferr"
	"github.com/stromdb/strom/internal/metadata"
	"github.com/stromdb/strom/internal/wire"
	"github.com/stromdb/strom/proto/flusspb"
	"github.com/stromdb/strom/server/auth"
	"github.com/stromdb/strom/server/cluster"
	"github.com/stromdb/strom/server/meta"
)

func init() { catalogAPIs.admin(wire.AlterTable, 0, 0, (*Catalog).handleAlterTable) }

func (c *Catalog) handleAlterTable(ctx context.Context, req *wire.Request) (proto.Message, error) {
	var r flusspb.AlterTableRequest
	if err := req.Decode(&r); err != nil {
		return nil, err
	}
	path := tablePathOf(r.GetTablePath())
	if err := c.access.authorize(req, auth.OpAlter, auth.TableResource(path.Database, path.Table)); err != nil {
		return nil, err
	}
	var a TableAlteration
	var err error
	if a.Properties, err = propertyChanges("table", r.GetConfigChanges()); err != nil {
		return nil, err
	}
	if a.AddColumns, err = addColumnsOf(r.GetAddColumns()); err != nil {
		return nil, err
	}
	switch {
	case len(r.GetDropColumns()) > 0:
		a.Unsupported = "drop"
	case len(r.GetRenameColumns()) > 0:
		a.Unsupported = "rename"
	case len(r.GetModifyColumns()) > 0:
		a.Unsupported = "modify"
	}
	return &flusspb.AlterTableResponse{}, c.AlterTable(ctx, path, a, r.GetIgnoreIfNotExists())
}

// TableAlteration is one ALTER_TABLE request: option changes or added columns, never both.
type TableAlteration struct {
	Properties []metadata.PropertyChange
	AddColumns []metadata.AddColumn
	// Unsupported names the first requested schema change Fluss does not support yet (drop,
	// rename or modify column), "" when there is none.
	Unsupported string
}

// AlterTable applies an ALTER_TABLE as a Fluss coordinator does: option changes are checked
// against the alterable options and the result validated like CREATE_TABLE; added columns
// produce a new schema version with the next id. The change is stored before it is published,
// and the table's open buckets learn it before AlterTable returns.
func (c *Catalog) AlterTable(ctx context.Context, path cluster.TablePath, a TableAlteration, ignoreIfNotExists bool) error {
	if err := metadata.ValidateDatabaseName(path.Database); err != nil {
		return err
	}
	if err := metadata.ValidateTableName(path.Table); err != nil {
		return err
	}
	schemaChange := len(a.AddColumns) > 0 || a.Unsupported != ""
	if schemaChange && len(a.Properties) > 0 {
		return ferr.New(ferr.InvalidAlterTableException,
			"Table alteration can only be applied to one of the following: table properties or table schema.")
	}
	defer c.lockDDL()()
	t, ok := c.TableByPath(path)
	if !ok {
		if ignoreIfNotExists {
			return nil
		}
		return ferr.New(ferr.TableNotExist, "Table %s does not exist.", path)
	}
	if a.Unsupported != "" {
		// Java's SchemaChangeException has no error code of its own.
		return ferr.New(ferr.UnknownServerError, "Not support %s column now.", a.Unsupported)
	}
	switch {
	case len(a.AddColumns) > 0:
		return c.addColumns(ctx, t, a.AddColumns)
	case len(a.Properties) > 0:
		return c.alterProperties(ctx, t, a.Properties)
	}
	return nil
}

func (c *Catalog) alterProperties(ctx context.Context, t *cluster.TableInfo, changes []metadata.PropertyChange) error {
	desc, changed, err := t.Descriptor.AlterProperties(changes, c.defaults)
	if err != nil {
		return err
	}
	if !changed {
		c.log.Info("no properties changed by ALTER TABLE", "table", t.Path)
		return nil
	}
	nt := *t
	nt.Descriptor = desc
	nt.DescriptorJSON = desc.JSON()
	nt.ModifiedMs = c.now().UnixMilli()
	if err := c.storeAlteredTable(ctx, &nt, nil); err != nil {
		return err
	}
	c.log.Info("altered table properties", "table", t.Path)
	return nil
}

func (c *Catalog) addColumns(ctx context.Context, t *cluster.TableInfo, adds []metadata.AddColumn) error {
	schema, err := t.Descriptor.Schema.AddColumns(adds)
	if err != nil {
		return err
	}
	desc := t.Descriptor.WithSchema(schema)
	if err := desc.Validate(c.defaults); err != nil {
		return err
	}
	nt := *t
	nt.SchemaID = t.SchemaID + 1
	nt.Descriptor = desc
	nt.DescriptorJSON = desc.JSON()
	nt.ModifiedMs = c.now().UnixMilli()
	js := metadata.SchemaJSON(schema)
	if err := c.storeAlteredTable(ctx, &nt, &schemaVersion{schema: schema, json: js}); err != nil {
		return err
	}
	c.log.Info("added columns", "table", t.Path, "schema_id", nt.SchemaID, "columns", len(adds))
	return nil
}

// storeAlteredTable persists nt (and its new schema version, when sv is set), publishes it and
// hands it to the replica manager. Called with ddlMu held.
func (c *Catalog) storeAlteredTable(ctx context.Context, nt *cluster.TableInfo, sv *schemaVersion) error {
	rec, _ := json.Marshal(tableRecord{ID: nt.ID, SchemaID: nt.SchemaID, Descriptor: nt.DescriptorJSON, CreatedMs: nt.CreatedMs, ModifiedMs: nt.ModifiedMs})
	ops := []meta.Op{meta.Put(tableKey(nt.Path), rec)}
	conds := []meta.Cond{{Key: tableKey(nt.Path), Exists: true}}
	if sv != nil {
		ops = append(ops, meta.Put(schemaKey(nt.ID, nt.SchemaID), sv.json))
		conds = append(conds, meta.Cond{Key: schemaKey(nt.ID, nt.SchemaID)})
	}
	ok, err := c.store.Txn(ctx, conds, ops)
	if err != nil {
		return fmt.Errorf("alter table %s: %w", nt.Path, err)
	}
	if !ok {
		return ferr.New(ferr.TableNotExist, "Table %s does not exist.", nt.Path)
	}
	c.cache.putTable(nt, sv)
	if c.updater != nil {
		if err := c.updater.UpdateTable(ctx, nt); err != nil {
			// The change is durable and published; buckets that could not take it pick it
			// up when they are next opened.
			c.log.Error("cannot apply altered table to its buckets", "table", nt.Path, "err", err)
		}
	}
	return nil
}
