//go:build !lake_rest

package lake

const restCatalogBuilt = false
