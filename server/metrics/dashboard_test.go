package metrics_test

import (
	"encoding/json"
	"os"
	"regexp"
	"strings"
	"testing"

	dto "github.com/prometheus/client_model/go"
)

// grafanaDashboard is the part of Grafana's dashboard model the test reads.
type grafanaDashboard struct {
	Title  string `json:"title"`
	Panels []struct {
		ID      int    `json:"id"`
		Title   string `json:"title"`
		Targets []struct {
			Expr string `json:"expr"`
		} `json:"targets"`
	} `json:"panels"`
	Templating struct {
		List []struct {
			Name  string `json:"name"`
			Query any    `json:"query"`
		} `json:"list"`
	} `json:"templating"`
}

var metricName = regexp.MustCompile(`\b(?:fluss|go|process)_[A-Za-z0-9_:]+`)

// Every metric the dashboard in docs/grafana queries is one the server exports, with the
// suffix its type implies (_bucket, _sum, _count only for histograms).
func TestDashboardQueriesExistingMetrics(t *testing.T) {
	data, err := os.ReadFile("../../docs/grafana/strom.json")
	if err != nil {
		t.Fatal(err)
	}
	var d grafanaDashboard
	if err := json.Unmarshal(data, &d); err != nil {
		t.Fatalf("dashboard is not valid JSON: %v", err)
	}
	if d.Title == "" || len(d.Panels) == 0 {
		t.Fatal("dashboard has no title or no panels")
	}
	queries := map[string]string{} // query -> where
	ids := map[int]bool{}
	for _, p := range d.Panels {
		if ids[p.ID] {
			t.Errorf("panel id %d used twice", p.ID)
		}
		ids[p.ID] = true
		if len(p.Targets) == 0 {
			t.Errorf("panel %q has no query", p.Title)
		}
		for _, tg := range p.Targets {
			queries[tg.Expr] = "panel " + p.Title
		}
	}
	for _, v := range d.Templating.List {
		if q, ok := v.Query.(string); ok {
			queries[q] = "variable " + v.Name
		}
	}

	n := start(t, nil)
	traffic(t, n, 5)
	fams := scrape(t, n)
	checked := 0
	for q, where := range queries {
		for _, name := range metricName.FindAllString(q, -1) {
			checked++
			if !exported(fams, name) {
				t.Errorf("%s queries %s, which the server does not export", where, name)
			}
		}
	}
	if checked < len(d.Panels) {
		t.Errorf("found only %d metric names in %d panels", checked, len(d.Panels))
	}
}

func exported(fams map[string]*dto.MetricFamily, name string) bool {
	if fams[name] != nil {
		return true
	}
	for _, suffix := range []string{"_bucket", "_sum", "_count"} {
		if base, ok := strings.CutSuffix(name, suffix); ok {
			if f := fams[base]; f != nil && f.GetType() == dto.MetricType_HISTOGRAM {
				return true
			}
		}
	}
	return false
}
