// Package lakeconf is the data lake's configuration and the vocabulary the tablet server and
// the tiering process (cmd/strom-lake, package lake) share: tiered offsets and lake snapshots.
// It does not import Iceberg, so the strom binary links none of it (docs/lake.md).
package lakeconf

import (
	"fmt"
	"net/url"
	"path/filepath"
	"slices"
	"strings"

	"github.com/stromdb/strom/internal/options"
)

// Cluster options, with Fluss's names (declared in internal/options).
const (
	OptFormat        = "datalake.format"
	OptIcebergPrefix = "datalake.iceberg."
)

// DefaultCatalogName is the Iceberg catalog name Fluss uses when datalake.iceberg.name is
// unset (IcebergCatalogUtils.ICEBERG_CATALOG_DEFAULT_NAME). The SQL catalog stores it in
// every row, so readers must open the catalog under the same name.
const DefaultCatalogName = "fluss-iceberg-catalog"

// Catalog types Strom opens: "sql" (default; an SQLite database in the layout of Iceberg's
// JDBC catalog, under the data directory unless uri names another), "hadoop" (a local
// file-system warehouse whose tables are found by path: <warehouse>/<db>/<table>/metadata)
// and "rest". Fluss's documentation names the JDBC catalog "jdbc": it is accepted as that
// name and stored as CatalogSQL, so the tiering process sees one name.
const (
	CatalogSQL    = "sql"
	CatalogJDBC   = "jdbc"
	CatalogREST   = "rest"
	CatalogHadoop = "hadoop"
)

// unsupportedCatalogs are Iceberg catalog types Fluss's documentation lists that Strom does not
// open; each is refused at start with what is supported, rather than failing in the tiering.
var unsupportedCatalogs = map[string]string{
	"hive": "a Hive metastore",
	"glue": "AWS Glue",
}

// supportedCatalogs is what the refusals name.
const supportedCatalogs = "jdbc (alias sql: an SQLite database in Iceberg's JDBC layout, the default), hadoop (a local file-system warehouse) or rest"

// Config is the cluster's data lake configuration.
type Config struct {
	// Format is datalake.format in lower case; "" when no lake is configured.
	Format string
	// Catalog holds the datalake.iceberg.* options without the prefix, defaults filled in.
	Catalog map[string]string
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
	format, err := options.DatalakeFormat.Get(raw)
	c := Config{DataDir: dataDir, Format: format}
	if err != nil || c.Format == "" {
		return c, err
	}
	abs, err := filepath.Abs(c.Dir())
	if err != nil {
		return c, fmt.Errorf("lake directory: %w", err)
	}
	c.Catalog = map[string]string{}
	for k, v := range raw {
		if rest, ok := strings.CutPrefix(k, OptIcebergPrefix); ok {
			c.Catalog[rest] = v
		}
	}
	if c.Catalog["name"] == "" {
		c.Catalog["name"] = DefaultCatalogName
	}
	t := strings.ToLower(strings.TrimSpace(c.Catalog["type"]))
	if t == "" || t == CatalogJDBC {
		t = CatalogSQL
	}
	c.Catalog["type"] = t
	switch t {
	case CatalogSQL:
		if uri := c.Catalog["uri"]; strings.HasPrefix(uri, "jdbc:") && !strings.HasPrefix(uri, "jdbc:sqlite:") {
			return c, fmt.Errorf("%suri: %q: the jdbc catalog of Strom is an SQLite database (jdbc:sqlite:<file> or a path); other JDBC databases are not supported", OptIcebergPrefix, uri)
		}
		if c.Catalog["uri"] == "" {
			c.Catalog["uri"] = filepath.Join(abs, "catalog.db")
		}
		if c.Catalog["warehouse"] == "" {
			c.Catalog["warehouse"] = (&url.URL{Scheme: "file", Path: filepath.Join(abs, "warehouse")}).String()
		}
	case CatalogHadoop:
		wh, err := hadoopWarehouse(c.Catalog["warehouse"])
		if err != nil {
			return c, err
		}
		c.Catalog["warehouse"] = wh
	case CatalogREST:
		if c.Catalog["uri"] == "" {
			return c, fmt.Errorf("%suri must be set for the rest catalog", OptIcebergPrefix)
		}
	default:
		if what, ok := unsupportedCatalogs[t]; ok {
			return c, fmt.Errorf("%stype: %s (%s) is not supported by Strom; supported: %s", OptIcebergPrefix, t, what, supportedCatalogs)
		}
		return c, fmt.Errorf("%stype: %q is not supported; supported: %s", OptIcebergPrefix, c.Catalog["type"], supportedCatalogs)
	}
	return c, nil
}

// hadoopWarehouse checks a hadoop catalog's warehouse and returns it as an absolute file://
// URL, so that the tiering process and readers started in other working directories (the
// warehouse is passed to them in the table options) find the same directory. Only local
// paths are served: iceberg-go's hadoop catalog commits by an atomic rename only on a local
// file system, and object stores would need `allow-unsafe-commits` and an SDK strom-lake does
// not link for it.
func hadoopWarehouse(wh string) (string, error) {
	wh = strings.TrimSpace(wh)
	if wh == "" {
		return "", fmt.Errorf("%swarehouse must be set for the hadoop catalog (a directory, /path or file:///path)", OptIcebergPrefix)
	}
	path := wh
	if u, err := url.Parse(wh); err == nil && u.Scheme != "" {
		if u.Scheme != "file" || (u.Host != "" && u.Host != "localhost") {
			return "", fmt.Errorf("%swarehouse: %q: the hadoop catalog of Strom serves a local directory (/path or file:///path), not %s://", OptIcebergPrefix, wh, u.Scheme)
		}
		if path = u.Path; path == "" {
			path = u.Opaque
		}
	}
	abs, err := filepath.Abs(path)
	if err != nil {
		return "", fmt.Errorf("%swarehouse %q: %w", OptIcebergPrefix, wh, err)
	}
	if abs == string(filepath.Separator) {
		return "", fmt.Errorf("%swarehouse: %q: the hadoop catalog needs a directory other than the root", OptIcebergPrefix, wh)
	}
	return (&url.URL{Scheme: "file", Path: abs}).String(), nil
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
	const prefix = "table." + OptIcebergPrefix
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
		path := SQLitePath(c.Catalog["uri"])
		if abs, err := filepath.Abs(path); err == nil {
			path = abs // a reader runs in another working directory
		}
		out[prefix+"uri"] = "jdbc:sqlite:" + path
	}
	return out
}

// SQLitePath is the file of an embedded catalog uri (a path, or jdbc:sqlite: / sqlite:// /
// sql:// and a path).
func SQLitePath(uri string) string {
	uri = strings.TrimPrefix(uri, "jdbc:sqlite:")
	return strings.TrimPrefix(strings.TrimPrefix(uri, "sqlite://"), "sql://")
}
