package coordinator

import (
	"maps"

	"github.com/stromdb/strom/server/cluster"
	"github.com/stromdb/strom/server/remote"
)

// metadataService answers the read-only questions about the catalog and where its buckets
// are, served by both roles: GET_METADATA, GET_TABLE_INFO, GET_TABLE_SCHEMA,
// LIST_DATABASES, DATABASE_EXISTS, GET_DATABASE_INFO, LIST_TABLES, TABLE_EXISTS and
// GET_FILESYSTEM_SECURITY_TOKEN.
// It holds no state of its own: it reads the catalog, the topology of live servers and, in a
// cluster, the bucket states.
type metadataService struct {
	catalog metadataCatalog
	topo    *cluster.Topology
	states  bucketStateReader // nil on the single node: every bucket is led by its one server
	access  access
	// lakeTableOptions are added to the served options of every lake-enabled table
	// (Options.LakeTableOptions).
	lakeTableOptions map[string]string
	// remote is the store GET_FILESYSTEM_SECURITY_TOKEN describes; nil: a file store's answer.
	remote *remote.Storage
}

var metadataAPIs apiTable[*metadataService]

// metadataCatalog is the part of the catalog the metadata answers read (Catalog).
type metadataCatalog interface {
	tableReader
	TableByID(id int64) (*cluster.TableInfo, bool)
	TableByPath(p cluster.TablePath) (*cluster.TableInfo, bool)
	PartitionByID(id int64) (*cluster.PartitionInfo, bool)
	PartitionByName(tableID int64, name string) (*cluster.PartitionInfo, bool)
	schemaVersion(tableID int64, schemaID int32) (schemaVersion, bool)
	Database(name string) (*Database, bool)
	DatabaseNames() []string
	TableNames(db string) ([]string, error)
}

// servedTableJSON is the table_json a client gets for t: the stored descriptor, plus, when the
// table is lake-enabled, the lake catalog options readers open the Iceberg table with
// (Options.LakeTableOptions), as Fluss's TableRegistration.toTableInfo adds them. They are added
// when served, never stored, so a change of the server's lake options reaches every table and
// disabling the lake hides them.
func (s *metadataService) servedTableJSON(t *cluster.TableInfo) []byte {
	if len(s.lakeTableOptions) == 0 || !t.Descriptor.Properties.DataLakeEnabled() {
		return t.DescriptorJSON
	}
	d := t.Descriptor
	d.Properties = make(map[string]string, len(t.Descriptor.Properties)+len(s.lakeTableOptions))
	maps.Copy(d.Properties, t.Descriptor.Properties)
	maps.Copy(d.Properties, s.lakeTableOptions)
	return d.JSON()
}
