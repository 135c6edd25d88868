package lake

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"net/url"
	"os"
	"path/filepath"

	"github.com/apache/iceberg-go"
	"github.com/apache/iceberg-go/catalog"
	"github.com/apache/iceberg-go/catalog/hadoop"
	sqlcat "github.com/apache/iceberg-go/catalog/sql"
	_ "modernc.org/sqlite" // pure-Go SQLite driver "sqlite" for the embedded catalog

	"github.com/stromdb/strom/server/lakeconf"
)

// Config is the cluster's data lake configuration (package lakeconf, which the tablet server
// reads without linking Iceberg).
type Config = lakeconf.Config

// ConfigFrom reads the lake options from the server's raw options (lakeconf.ConfigFrom).
func ConfigFrom(raw map[string]string, dataDir string) (Config, error) {
	return lakeconf.ConfigFrom(raw, dataDir)
}

// DefaultCatalogName and JDBCCatalogImpl are lakeconf's.
const (
	DefaultCatalogName = lakeconf.DefaultCatalogName
	JDBCCatalogImpl    = lakeconf.JDBCCatalogImpl
)

// OpenCatalog opens the configured Iceberg catalog. The embedded SQL catalog is an SQLite
// database in the layout of Iceberg's JDBC catalog (tables iceberg_tables and
// iceberg_namespace_properties), which pyiceberg's SqlCatalog, Spark and Flink also open.
// The hadoop catalog is iceberg-go's (package catalog/hadoop): a table is the directory
// <warehouse>/<db>/<table>, its current metadata the highest metadata/vN.metadata.json
// (metadata/version-hint.text names N), in the layout of Java Iceberg's HadoopCatalog.
func OpenCatalog(ctx context.Context, c Config) (catalog.Catalog, error) {
	name := c.Catalog["name"]
	switch c.Catalog["type"] {
	case lakeconf.CatalogREST:
		if !restCatalogBuilt {
			return nil, fmt.Errorf("%stype: rest is not in this strom-lake binary (built with -tags lake_norest)", lakeconf.OptIcebergPrefix)
		}
	case lakeconf.CatalogHadoop:
		// lakeconf made the warehouse an absolute file:// URL. The catalog creates the
		// directory only with the first namespace; creating it here makes an unwritable
		// warehouse fail at start rather than at the first tiering round.
		wh, err := url.Parse(c.Catalog["warehouse"])
		if err != nil || wh.Scheme != "file" {
			return nil, fmt.Errorf("%swarehouse %q is not a file:// URL (lakeconf.ConfigFrom makes it one)", lakeconf.OptIcebergPrefix, c.Catalog["warehouse"])
		}
		if err := os.MkdirAll(wh.Path, 0o755); err != nil {
			return nil, fmt.Errorf("create warehouse: %w", err)
		}
		cat, err := hadoop.NewCatalog(name, c.Catalog["warehouse"], iceberg.Properties(c.Catalog))
		if err != nil {
			return nil, fmt.Errorf("open hadoop catalog %s: %w", wh.Path, err)
		}
		return cat, nil
	}
	if c.Catalog["type"] != lakeconf.CatalogSQL {
		return catalog.Load(ctx, name, iceberg.Properties(c.Catalog))
	}
	path := lakeconf.SQLitePath(c.Catalog["uri"])
	if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
		return nil, fmt.Errorf("create catalog directory: %w", err)
	}
	if wh, err := url.Parse(c.Catalog["warehouse"]); err == nil && wh.Scheme == "file" {
		if err := os.MkdirAll(wh.Path, 0o755); err != nil {
			return nil, fmt.Errorf("create warehouse: %w", err)
		}
	}
	db, err := sql.Open("sqlite", "file:"+path+"?_pragma=busy_timeout(10000)")
	if err != nil {
		return nil, fmt.Errorf("open catalog database %s: %w", path, err)
	}
	cat, err := sqlcat.NewCatalog(name, db, sqlcat.SQLite, iceberg.Properties(c.Catalog))
	if err != nil {
		db.Close()
		return nil, fmt.Errorf("open sql catalog %s: %w", path, err)
	}
	return &ownedDBCatalog{Catalog: cat, db: db}, nil
}

// ownedDBCatalog closes the database handle the embedded catalog was opened on (the SQL
// catalog leaves caller-supplied handles open).
type ownedDBCatalog struct {
	*sqlcat.Catalog
	db *sql.DB
}

func (c *ownedDBCatalog) Close() error {
	return errors.Join(c.Catalog.Close(), c.db.Close())
}
