package lakeconf

import (
	"github.com/stromdb/strom/internal/metadata"
	"github.com/stromdb/strom/server/cluster"
)

// Catalog is what the tiering reads of the Fluss catalog: the server's catalog (which
// cluster.Catalog has) on the host side, and its remote view in the tiering process.
type Catalog interface {
	TableByID(id int64) (*cluster.TableInfo, bool)
	Schema(tableID int64, schemaID int32) (metadata.Schema, bool)
}
