package lake

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"net/url"
	"os"
	"path/filepath"
	"slices"
	"strings"

	"github.com/apache/iceberg-go"
	"github.com/apache/iceberg-go/catalog"
	sqlcat "github.com/apache/iceberg-go/catalog/sql"
	_ "modernc.org/sqlite" // pure-Go SQLite driver "sqlite" for the embedded catalog
)

// Cluster options, with Fluss's names.
const (
	OptFormat        = "datalake.format"
	optIcebergPrefix = "datalake.iceberg."
)

// DefaultCatalogName is the Iceberg catalog name Fluss uses when datalake.iceberg.name is
// unset (IcebergCatalogUtils.ICEBERG_CATALOG_DEFAULT_NAME). The SQL catalog stores it in
// every row, so readers must open the catalog under the same name.
const DefaultCatalogName = "fluss-iceberg-catalog"

// Catalog types Strom opens: "sql" (default; an SQLite database under the data directory
// unless uri names another) and "rest".
const (
	CatalogSQL  = "sql"
	CatalogREST = "rest"
)

// Config is the cluster's data lake configuration.
type Config struct {
	// Format is datalake.format in lower case; "" when no lake is configured.
	Format string
	// Catalog holds the datalake.iceberg.* options without the prefix, defaults filled in.
	Catalog iceberg.Properties
	// DataDir is the server's data directory; the embedded catalog, warehouse and the
	// tiered-offsets files live under DataDir/lake.
	DataDir string
}

// Enabled reports whether tiering runs.
func (c Config) Enabled() bool { return c.Format != "" }

// Dir is DataDir/lake.
func (c Config) Dir() string { return filepath.Join(c.DataDir, "lake") }

// ConfigFrom reads the lake options from the server's raw options. Only the iceberg format
// is implemented; another datalake.format is an error, so that a cluster never accepts
// lake-enabled tables it would not tier.
func ConfigFrom(raw map[string]string, dataDir string) (Config, error) {
	c := Config{DataDir: dataDir, Format: strings.ToLower(strings.TrimSpace(raw[OptFormat]))}
	if c.Format == "" {
		return c, nil
	}
	if c.Format != "iceberg" {
		return c, fmt.Errorf("%s: %q is not supported by Strom (only iceberg)", OptFormat, raw[OptFormat])
	}
	abs, err := filepath.Abs(c.Dir())
	if err != nil {
		return c, fmt.Errorf("lake directory: %w", err)
	}
	c.Catalog = iceberg.Properties{}
	for k, v := range raw {
		if rest, ok := strings.CutPrefix(k, optIcebergPrefix); ok {
			c.Catalog[rest] = v
		}
	}
	if c.Catalog["name"] == "" {
		c.Catalog["name"] = DefaultCatalogName
	}
	if c.Catalog["type"] == "" {
		c.Catalog["type"] = CatalogSQL
	}
	switch c.Catalog["type"] {
	case CatalogSQL:
		if c.Catalog["uri"] == "" {
			c.Catalog["uri"] = filepath.Join(abs, "catalog.db")
		}
		if c.Catalog["warehouse"] == "" {
			c.Catalog["warehouse"] = (&url.URL{Scheme: "file", Path: filepath.Join(abs, "warehouse")}).String()
		}
	case CatalogREST:
		if !restCatalogBuilt {
			return c, fmt.Errorf("%stype: rest needs a strom binary built with -tags lake_rest", optIcebergPrefix)
		}
		if c.Catalog["uri"] == "" {
			return c, fmt.Errorf("%suri must be set for the rest catalog", optIcebergPrefix)
		}
	default:
		return c, fmt.Errorf("%stype: %q is not supported (sql or rest)", optIcebergPrefix, c.Catalog["type"])
	}
	return c, nil
}

// OpenCatalog opens the configured Iceberg catalog. The embedded SQL catalog is an SQLite
// database in the layout of Iceberg's JDBC catalog (tables iceberg_tables and
// iceberg_namespace_properties), which pyiceberg's SqlCatalog, Spark and Flink also open.
func OpenCatalog(ctx context.Context, c Config) (catalog.Catalog, error) {
	name := c.Catalog["name"]
	if c.Catalog["type"] != CatalogSQL {
		return catalog.Load(ctx, name, c.Catalog)
	}
	path := sqlitePath(c.Catalog["uri"])
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
	cat, err := sqlcat.NewCatalog(name, db, sqlcat.SQLite, c.Catalog)
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

// JDBCCatalogImpl is the Java class of Iceberg's JDBC catalog, whose tables the embedded SQL
// catalog lays out.
const JDBCCatalogImpl = "org.apache.iceberg.jdbc.JdbcCatalog"

// sensitiveOptionWords mark catalog options never shown to clients: a key containing one of
// them (case-insensitively) is left out, as Fluss's MetadataManager.removeSensitiveTableOptions
// leaves it out.
var sensitiveOptionWords = []string{"password", "secret", "key"}

// ReaderTableOptions are the options a lake-enabled table's info carries for readers, keyed
// `table.datalake.iceberg.<option>`: Fluss's coordinator adds every `datalake.iceberg.*`
// cluster option that way (LakeStorageUtils.generateDefaultTableLakeOptions), and the Flink
// connector opens the Iceberg catalog from them for `$lake` tables and union reads.
//
// The embedded catalog is described as Java Iceberg opens it: `catalog-impl` = Iceberg's
// JdbcCatalog (not `type`: Iceberg's Flink catalog factory accepts only hive, hadoop and rest
// as a type and refuses a type next to catalog-impl), `uri` = `jdbc:sqlite:<file>`, and the
// warehouse and catalog name. Other options pass unchanged, sensitive ones (password, secret,
// key) are left out. Nil when no lake is configured.
func (c Config) ReaderTableOptions() map[string]string {
	if !c.Enabled() {
		return nil
	}
	const prefix = "table." + optIcebergPrefix
	out := make(map[string]string, len(c.Catalog)+1)
	for k, v := range c.Catalog {
		lk := strings.ToLower(k)
		if slices.ContainsFunc(sensitiveOptionWords, func(w string) bool { return strings.Contains(lk, w) }) {
			continue
		}
		out[prefix+k] = v
	}
	if c.Catalog["type"] == CatalogSQL {
		delete(out, prefix+"type")
		out[prefix+"catalog-impl"] = JDBCCatalogImpl
		path := sqlitePath(c.Catalog["uri"])
		if abs, err := filepath.Abs(path); err == nil {
			path = abs // a reader runs in another working directory
		}
		out[prefix+"uri"] = "jdbc:sqlite:" + path
	}
	return out
}

// sqlitePath is the file of an embedded catalog uri (a path, or sqlite:// / sql:// and a path).
func sqlitePath(uri string) string {
	return strings.TrimPrefix(strings.TrimPrefix(uri, "sqlite://"), "sql://")
}
