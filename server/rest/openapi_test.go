package rest

import (
	"encoding/json"
	"slices"
	"strings"
	"testing"
)

// The checked-in OpenAPI document lists exactly the routes the gateway serves, with the
// path parameters each pattern has.
func TestOpenAPIMatchesRoutes(t *testing.T) {
	var doc struct {
		Paths map[string]map[string]struct {
			Parameters []struct{ Name, In string }
			Responses  map[string]any
		}
	}
	if err := json.Unmarshal(openAPI, &doc); err != nil {
		t.Fatal(err)
	}
	var documented, served []string
	for path, ops := range doc.Paths {
		for method, op := range ops {
			documented = append(documented, strings.ToUpper(method)+" "+path)
			if _, ok := op.Responses["default"]; !ok {
				t.Errorf("%s %s: no default (error) response", method, path)
			}
			var params []string
			for _, p := range op.Parameters {
				if p.In == "path" {
					params = append(params, "{"+p.Name+"}")
				}
			}
			for _, seg := range strings.Split(path, "/") {
				if strings.HasPrefix(seg, "{") && !slices.Contains(params, seg) {
					t.Errorf("%s %s: path parameter %s not documented", method, path, seg)
				}
			}
		}
	}
	g := New(Options{})
	for _, rt := range g.routes() {
		served = append(served, rt.method+" "+rt.pattern)
	}
	served = append(served, "GET /openapi.json")
	slices.Sort(documented)
	slices.Sort(served)
	if !slices.Equal(documented, served) {
		t.Fatalf("OpenAPI paths differ from the routes:\ndocumented %q\nserved     %q", documented, served)
	}
}
