package coordinator

import (
	"context"
	"encoding/json"
	"fmt"
	"maps"

	"google.golang.org/protobuf/proto"

	"github.com/stromdb/strom/internal/ferr"
	"github.com/stromdb/strom/internal/metadata"
	"github.com/stromdb/strom/internal/wire"
	"github.com/stromdb/strom/proto/flusspb"
	"github.com/stromdb/strom/server/auth"
	"github.com/stromdb/strom/server/meta"
)

func init() { catalogAPIs.admin(wire.AlterDatabase, 0, 0, (*Catalog).handleAlterDatabase) }

func (c *Catalog) handleAlterDatabase(ctx context.Context, req *wire.Request) (proto.Message, error) {
	var r flusspb.AlterDatabaseRequest
	if err := req.Decode(&r); err != nil {
		return nil, err
	}
	if err := c.access.authorize(req, auth.OpAlter, auth.DatabaseResource(r.GetDatabaseName())); err != nil {
		return nil, err
	}
	changes, err := propertyChanges("database", r.GetConfigChanges())
	if err != nil {
		return nil, err
	}
	var comment *string
	if r.Comment != nil {
		comment = proto.String(r.GetComment())
	}
	return &flusspb.AlterDatabaseResponse{}, c.AlterDatabase(ctx, r.GetDatabaseName(), changes, comment, r.GetIgnoreIfNotExists())
}

// AlterDatabase sets and resets custom properties and the comment of a database, as a Fluss
// coordinator does: an empty comment removes it; nothing is stored when nothing changes.
func (c *Catalog) AlterDatabase(ctx context.Context, name string, changes []metadata.PropertyChange, comment *string, ignoreIfNotExists bool) error {
	defer c.lockDDL()()
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
	now := c.now().UnixMilli()
	stored := desc.JSON()
	rec, _ := json.Marshal(databaseRecord{Descriptor: stored, CreatedMs: d.CreatedMs, ModifiedMs: now})
	ok, err := c.store.Txn(ctx, []meta.Cond{{Key: databaseKey(name), Exists: true}}, []meta.Op{meta.Put(databaseKey(name), rec)})
	if err != nil {
		return fmt.Errorf("alter database %s: %w", name, err)
	}
	if !ok {
		return ferr.New(ferr.DatabaseNotExist, "Database %s not exists.", name)
	}
	c.cache.putDatabase(&Database{Name: name, Descriptor: desc, JSON: stored, CreatedMs: d.CreatedMs, ModifiedMs: now})
	c.log.Info("altered database", "database", name)
	return nil
}
