package rest

import "net/http"

// routes is every endpoint of the API (relative to Prefix). openapi.json documents exactly
// these; TestOpenAPIMatchesRoutes checks it.
func (g *Gateway) routes() []route {
	const t = "/databases/{database}/tables/{table}"
	return []route{
		{http.MethodGet, "/cluster", g.getCluster},
		{http.MethodGet, "/databases", g.listDatabases},
		{http.MethodPost, "/databases", g.createDatabase},
		{http.MethodGet, "/databases/{database}", g.getDatabase},
		{http.MethodDelete, "/databases/{database}", g.dropDatabase},
		{http.MethodGet, "/databases/{database}/tables", g.listTables},
		{http.MethodPost, "/databases/{database}/tables", g.createTable},
		{http.MethodGet, t, g.getTable},
		{http.MethodDelete, t, g.dropTable},
		{http.MethodPatch, t, g.alterTable},
		{http.MethodGet, t + "/schema", g.getSchema},
		{http.MethodGet, t + "/partitions", g.listPartitions},
		{http.MethodGet, t + "/buckets", g.getBuckets},
		{http.MethodGet, t + "/lake", g.getLake},
		{http.MethodGet, t + "/offsets", g.getOffsets},
		{http.MethodPost, t + "/rows", g.writeRows},
		{http.MethodPost, t + "/rows/delete", g.deleteRows},
		{http.MethodPost, t + "/lookup", g.lookup},
		{http.MethodPost, t + "/prefix-lookup", g.prefixLookup},
		{http.MethodGet, t + "/scan", g.scan},
		{http.MethodGet, t + "/tail", g.tail},
		{http.MethodGet, "/acls", g.listAcls},
		{http.MethodPost, "/acls", g.createAcls},
		{http.MethodDelete, "/acls", g.dropAcls},
	}
}
