//go:build lake_norest

package lake

const restCatalogBuilt = false
