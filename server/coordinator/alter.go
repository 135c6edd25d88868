package coordinator

import (
	"context"
	"encoding/json"
	"fmt"
	"maps"

	"github.com/stromdb/strom/internal/ferr"
	"github.com/stromdb/strom/internal/metadata"
	"github.com/stromdb/strom/server/cluster"
	"github.com/stromdb/strom/server/meta"
)

// TableUpdater is implemented by replica managers that apply an altered table (new options,
// new schema version) to the buckets they already lead.
type TableUpdater interface {
	UpdateTable(ctx context.Context, t *cluster.TableInfo) error
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
func (c *Coordinator) AlterTable(ctx context.Context, path cluster.TablePath, a TableAlteration, ignoreIfNotExists bool) error {
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
	c.ddlMu.Lock()
	defer c.ddlMu.Unlock()
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

func (c *Coordinator) alterProperties(ctx context.Context, t *cluster.TableInfo, changes []metadata.PropertyChange) error {
	desc, changed, err := t.Descriptor.AlterProperties(changes, c.opts.Defaults)
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
	nt.ModifiedMs = c.nowMs()
	if err := c.storeAlteredTable(ctx, &nt, nil); err != nil {
		return err
	}
	c.log.Info("altered table properties", "table", t.Path)
	return nil
}

func (c *Coordinator) addColumns(ctx context.Context, t *cluster.TableInfo, adds []metadata.AddColumn) error {
	schema, err := t.Descriptor.Schema.AddColumns(adds)
	if err != nil {
		return err
	}
	desc := t.Descriptor.WithSchema(schema)
	if err := desc.Validate(c.opts.Defaults); err != nil {
		return err
	}
	nt := *t
	nt.SchemaID = t.SchemaID + 1
	nt.Descriptor = desc
	nt.DescriptorJSON = desc.JSON()
	nt.ModifiedMs = c.nowMs()
	js := metadata.SchemaJSON(schema)
	if err := c.storeAlteredTable(ctx, &nt, &schemaVersion{schema: schema, json: js}); err != nil {
		return err
	}
	c.log.Info("added columns", "table", t.Path, "schema_id", nt.SchemaID, "columns", len(adds))
	return nil
}

// storeAlteredTable persists nt (and its new schema version, when sv is set), publishes it and
// hands it to the replica manager. Called with ddlMu held.
func (c *Coordinator) storeAlteredTable(ctx context.Context, nt *cluster.TableInfo, sv *schemaVersion) error {
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
	c.mu.Lock()
	c.tables[nt.Path] = nt
	c.tablesByID[nt.ID] = nt
	if sv != nil {
		versions := maps.Clone(c.schemas[nt.ID])
		if versions == nil {
			versions = map[int32]schemaVersion{}
		}
		versions[nt.SchemaID] = *sv
		c.schemas[nt.ID] = versions
	}
	c.mu.Unlock()
	u, ok := c.replicas.(TableUpdater)
	if c.updater != nil {
		u, ok = c.updater, true
	}
	if ok {
		if err := u.UpdateTable(ctx, nt); err != nil {
			// The change is durable and published; buckets that could not take it pick it
			// up when they are next opened.
			c.log.Error("cannot apply altered table to its buckets", "table", nt.Path, "err", err)
		}
	}
	return nil
}

// AlterDatabase sets and resets custom properties and the comment of a database, as a Fluss
// coordinator does: an empty comment removes it; nothing is stored when nothing changes.
func (c *Coordinator) AlterDatabase(ctx context.Context, name string, changes []metadata.PropertyChange, comment *string, ignoreIfNotExists bool) error {
	c.ddlMu.Lock()
	defer c.ddlMu.Unlock()
	d, ok := c.Database(name)
	if !ok {
		if ignoreIfNotExists {
			return nil
		}
		return ferr.New(ferr.DatabaseNotExist, "Database %s not exists.", name)
	}
	desc := metadata.DatabaseDescriptor{Comment: d.Descriptor.Comment, HasComment: d.Descriptor.HasComment, CustomProperties: maps.Clone(d.Descriptor.CustomProperties)}
	if desc.CustomProperties == nil {
		desc.CustomProperties = map[string]string{}
	}
	for _, ch := range changes {
		if ch.Reset {
			delete(desc.CustomProperties, ch.Key)
		} else {
			desc.CustomProperties[ch.Key] = ch.Value
		}
	}
	if comment == nil && maps.Equal(desc.CustomProperties, d.Descriptor.CustomProperties) {
		return nil
	}
	if comment != nil {
		desc.Comment, desc.HasComment = *comment, *comment != ""
	}
	now := c.nowMs()
	stored := desc.JSON()
	rec, _ := json.Marshal(databaseRecord{Descriptor: stored, CreatedMs: d.CreatedMs, ModifiedMs: now})
	ok, err := c.store.Txn(ctx, []meta.Cond{{Key: databaseKey(name), Exists: true}}, []meta.Op{meta.Put(databaseKey(name), rec)})
	if err != nil {
		return fmt.Errorf("alter database %s: %w", name, err)
	}
	if !ok {
		return ferr.New(ferr.DatabaseNotExist, "Database %s not exists.", name)
	}
	c.mu.Lock()
	c.databases[name] = &Database{Name: name, Descriptor: desc, JSON: stored, CreatedMs: d.CreatedMs, ModifiedMs: now}
	c.mu.Unlock()
	c.log.Info("altered database", "database", name)
	return nil
}
