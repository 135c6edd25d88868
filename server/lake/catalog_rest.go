//go:build !lake_norest

package lake

// The REST catalog client pulls in the AWS SDK (SigV4 signing), about 4 MB of strom-lake's
// binary (strom links none of it); it is built by default, since Fluss's documentation lists
// rest among its catalogs, and left out with `-tags lake_norest` (docs/lake.md).
import _ "github.com/apache/iceberg-go/catalog/rest" // registers catalog type "rest"

const restCatalogBuilt = true
