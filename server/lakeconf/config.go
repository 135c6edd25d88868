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
// JDBC catalog, under the data directory unless uri names another) and "rest". Fluss's
// documentation names the JDBC catalog "jdbc": it is accepted as that name and stored as
// CatalogSQL, so the tiering process sees one name.
const (
	CatalogSQL  = "sql"
	CatalogJDBC = "jdbc"
	CatalogREST = "rest"
)

// unsupportedCatalogs are Iceberg catalog types Fluss's documentation lists that Strom does not
// open; each is refused at start with what is supported, rather than failing in the tiering.
var unsupportedCatalogs = map[string]string{
	"hadoop": "a file-system warehouse without a catalog database",
	"hive":   "a Hive metastore",
	"glue":   "AWS Glue",
}

// supportedCatalogs is what the refusals name.
const supportedCatalogs = "jdbc (alias sql: an SQLite database in Iceberg's JDBC layout, the default) or rest"

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
