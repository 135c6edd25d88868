//go:build lake_rest

package lake

// The REST catalog client pulls in the AWS SDK (SigV4 signing), about 4 MB of binary; it is
// built only with `-tags lake_rest` (docs/lake.md).
import _ "github.com/apache/iceberg-go/catalog/rest" // registers catalog type "rest"

const restCatalogBuilt = true
