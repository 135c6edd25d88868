//go:build !lake_norest

package lake

import (
	"context"
	"net/http"
	"net/http/httptest"
	"sync/atomic"
	"testing"

	"github.com/stromdb/strom/server/lakeconf"
)

// TestRESTCatalogInDefaultBuild opens a `datalake.iceberg.type: rest` catalog with the default
// build of this package: the REST client is linked in and asks the server for its
// configuration, as Iceberg's REST protocol starts.
func TestRESTCatalogInDefaultBuild(t *testing.T) {
	var configAsked atomic.Bool
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Path == "/v1/config" {
			configAsked.Store(true)
			w.Header().Set("Content-Type", "application/json")
			w.Write([]byte(`{"defaults":{},"overrides":{}}`))
			return
		}
		http.NotFound(w, r)
	}))
	defer srv.Close()
	c, err := lakeconf.ConfigFrom(map[string]string{"datalake.format": "iceberg", "datalake.iceberg.type": "rest",
		"datalake.iceberg.uri": srv.URL}, t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	cat, err := OpenCatalog(context.Background(), c)
	if err != nil {
		t.Fatalf("open rest catalog: %v", err)
	}
	if !configAsked.Load() {
		t.Fatal("the REST catalog did not ask the server for its configuration")
	}
	if closer, ok := cat.(interface{ Close() error }); ok {
		closer.Close()
	}
}
