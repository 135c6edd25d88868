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
	"github.com/stromdb/strom/server/meta"
)

func init() { catalogAPIs.admin(wire.CreateDatabase, 0, 0, (*Catalog).handleCreateDatabase) }

func (c *Catalog) handleCreateDatabase(ctx context.Context, req *wire.Request) (proto.Message, error) {
	var r flusspb.CreateDatabaseRequest
	if err := req.Decode(&r); err != nil {
		return nil, err
	}
	if err := c.access.authorize(req, auth.OpCreate, auth.ClusterResource()); err != nil {
		return nil, err
	}
	return &flusspb.CreateDatabaseResponse{}, c.CreateDatabase(ctx, r.GetDatabaseName(), r.GetDatabaseJson(), r.GetIgnoreIfExists())
}

// CreateDatabase registers a database. descJSON may be nil for an empty descriptor.
func (c *Catalog) CreateDatabase(ctx context.Context, name string, descJSON []byte, ignoreIfExists bool) error {
	if err := metadata.ValidateDatabaseName(name); err != nil {
		return err
	}
	var desc metadata.DatabaseDescriptor
	if len(descJSON) > 0 {
		d, err := metadata.ParseDatabaseDescriptor(descJSON)
		if err != nil {
			return ferr.New(ferr.InvalidDatabaseException, "invalid database descriptor: %v", err)
		}
		desc = d
	}
	defer c.lockDDL()()
	if _, ok := c.Database(name); ok {
		if ignoreIfExists {
			return nil
		}
		return ferr.New(ferr.DatabaseAlreadyExist, "Database %s already exists.", name)
	}
	now := c.now().UnixMilli()
	stored := desc.JSON()
	rec, _ := json.Marshal(databaseRecord{Descriptor: stored, CreatedMs: now, ModifiedMs: now})
	ok, err := c.store.Txn(ctx, []meta.Cond{{Key: databaseKey(name)}}, []meta.Op{meta.Put(databaseKey(name), rec)})
	if err != nil {
		return fmt.Errorf("create database %s: %w", name, err)
	}
	if !ok {
		return ferr.New(ferr.DatabaseAlreadyExist, "Database %s already exists.", name)
	}
	c.cache.putDatabase(&Database{Name: name, Descriptor: desc, JSON: stored, CreatedMs: now, ModifiedMs: now})
	c.log.Info("created database", "database", name)
	return nil
}
