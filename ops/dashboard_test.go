package ops

import (
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/snowfence/snowfence/internal/testkit/testenv"
)

const dashboardFile = "grafana/snowfence-dashboard.json"

// datasourceRef is where every panel and query of the dashboard takes
// its data: the dashboard's data source variable.
const datasourceRef = "${datasource}"

type dsRef struct {
	Type string `json:"type"`
	UID  string `json:"uid"`
}

type panel struct {
	ID         int    `json:"id"`
	Type       string `json:"type"`
	Title      string `json:"title"`
	Datasource *dsRef `json:"datasource"`
	GridPos    struct {
		X, Y, W, H int
	} `json:"gridPos"`
	Targets []struct {
		RefID      string `json:"refId"`
		Expr       string `json:"expr"`
		Datasource *dsRef `json:"datasource"`
	} `json:"targets"`
	Panels []panel `json:"panels"` // a collapsed row's
}

type dashboard struct {
	Title         string  `json:"title"`
	UID           string  `json:"uid"`
	SchemaVersion int     `json:"schemaVersion"`
	Panels        []panel `json:"panels"`
	Templating    struct {
		List []struct {
			Name       string `json:"name"`
			Type       string `json:"type"`
			Query      any    `json:"query"`
			Datasource *dsRef `json:"datasource"`
		} `json:"list"`
	} `json:"templating"`
}

func readDashboard(t *testing.T) dashboard {
	t.Helper()
	b, err := os.ReadFile(dashboardFile)
	if err != nil {
		t.Fatal(err)
	}
	var d dashboard
	if err := json.Unmarshal(b, &d); err != nil {
		t.Fatalf("%s: %v", dashboardFile, err)
	}
	return d
}

// allPanels returns the panels, rows' panels included.
func (d dashboard) allPanels() []panel {
	var out []panel
	var walk func([]panel)
	walk = func(ps []panel) {
		for _, p := range ps {
			out = append(out, p)
			walk(p.Panels)
		}
	}
	walk(d.Panels)
	return out
}

// exprs returns every query of the dashboard by where it is.
func (d dashboard) exprs() map[string]string {
	out := map[string]string{}
	for _, p := range d.allPanels() {
		for _, tg := range p.Targets {
			out[fmt.Sprintf("panel %d %q query %s", p.ID, p.Title, tg.RefID)] = tg.Expr
		}
	}
	return out
}

// Grafana's variables, as the queries use them, with a value PromQL takes.
var grafanaVariables = strings.NewReplacer("$__rate_interval", "5m", "$__interval", "1m", "$job", ".*", "$instance", ".*")

func TestDashboardIsWellFormed(t *testing.T) {
	d := readDashboard(t)
	if d.Title == "" || d.UID == "" {
		t.Errorf("title %q, uid %q: both must be set", d.Title, d.UID)
	}
	// 41 is Grafana 12's: a dashboard of an older schema is migrated on
	// import, one of a newer schema is refused by older Grafanas.
	if d.SchemaVersion < 39 || d.SchemaVersion > 43 {
		t.Errorf("schemaVersion %d, want a current one (39–43)", d.SchemaVersion)
	}
	var hasDS bool
	for _, v := range d.Templating.List {
		switch v.Type {
		case "datasource":
			if v.Name == "datasource" && v.Query == "prometheus" {
				hasDS = true
			}
		case "query":
			if v.Datasource == nil || v.Datasource.UID != datasourceRef {
				t.Errorf("variable %s does not query %s", v.Name, datasourceRef)
			}
		}
	}
	if !hasDS {
		t.Errorf("no datasource variable named datasource of type prometheus: the panels' %s has nothing to name", datasourceRef)
	}
	ids := map[int]bool{}
	for _, p := range d.allPanels() {
		if ids[p.ID] || p.ID <= 0 {
			t.Errorf("panel %q: id %d is not a new positive id", p.Title, p.ID)
		}
		ids[p.ID] = true
		if p.Title == "" {
			t.Errorf("panel %d has no title", p.ID)
		}
		if p.GridPos.W <= 0 || p.GridPos.H <= 0 || p.GridPos.X < 0 || p.GridPos.X+p.GridPos.W > 24 {
			t.Errorf("panel %d %q: gridPos %+v is outside the 24-column grid", p.ID, p.Title, p.GridPos)
		}
		if p.Type == "row" {
			continue
		}
		if p.Datasource == nil || p.Datasource.UID != datasourceRef || p.Datasource.Type != "prometheus" {
			t.Errorf("panel %d %q: datasource %+v, want prometheus %s", p.ID, p.Title, p.Datasource, datasourceRef)
		}
		if len(p.Targets) == 0 {
			t.Errorf("panel %d %q has no query", p.ID, p.Title)
		}
		for _, tg := range p.Targets {
			if tg.Datasource == nil || tg.Datasource.UID != datasourceRef {
				t.Errorf("panel %d %q query %s: datasource %+v, want %s", p.ID, p.Title, tg.RefID, tg.Datasource, datasourceRef)
			}
			if strings.TrimSpace(tg.Expr) == "" {
				t.Errorf("panel %d %q query %s has no expression", p.ID, p.Title, tg.RefID)
			}
		}
	}
}

// TestDashboardUsesExportedMetrics checks every metric and label value the
// dashboard's queries and variables name against a real scrape, and that
// it shows what an operator looks for first.
func TestDashboardUsesExportedMetrics(t *testing.T) {
	ex := scrape(t)
	d := readDashboard(t)
	used := map[string]bool{}
	for where, expr := range d.exprs() {
		sels, err := selectors(expr)
		if err != nil {
			t.Errorf("%s: %v", where, err)
			continue
		}
		for _, s := range sels {
			used[s.name] = true
			for _, bad := range ex.check(s) {
				t.Errorf("%s: %s", where, bad)
			}
		}
	}
	for _, v := range d.Templating.List {
		q, ok := v.Query.(map[string]any)
		if v.Type != "query" || !ok {
			continue
		}
		// label_values(selector, label)
		text, _ := q["query"].(string)
		inner, ok := strings.CutPrefix(text, "label_values(")
		if !ok {
			t.Errorf("variable %s: query %q is not label_values(…)", v.Name, text)
			continue
		}
		i := strings.LastIndexByte(inner, ',')
		if i < 0 {
			t.Errorf("variable %s: query %q has no selector", v.Name, text)
			continue
		}
		s, err := parseSelector(inner[:i])
		if err != nil {
			t.Errorf("variable %s: %v", v.Name, err)
			continue
		}
		for _, bad := range ex.check(s) {
			t.Errorf("variable %s: %s", v.Name, bad)
		}
		if label := strings.TrimSpace(strings.TrimSuffix(inner[i+1:], ")")); !targetLabels[label] {
			t.Errorf("variable %s lists label %s, which is not a target label", v.Name, label)
		}
	}
	for _, m := range []string{
		"snowfence_ids_issued_total",                     // IDs per second
		"snowfence_refusals_total",                       // refusals by reason
		"snowfence_fence_remaining_seconds",              // fence remaining
		"snowfence_lease_state",                          // lease state
		"snowfence_clock_max_error_seconds",              // clock error…
		"snowfence_clock_max_error_limit_seconds",        // …against the policy
		"snowfence_lease_renew_failures_total",           // renewal failures
		"snowfence_lease_losses_total",                   // losses
		"snowfence_sequence_waits_total",                 // sequence waits
		"snowfence_http_request_duration_seconds_bucket", // latency quantiles
		"snowfence_caller_requests_throttled_total",      // per-caller throttling
	} {
		if !used[m] {
			t.Errorf("no panel shows %s", m)
		}
	}
}

// TestDashboardQueriesParse has promtool check the dashboard's queries as
// PromQL, with Grafana's variables given values. Without promtool the test
// is skipped, except under CI=true, where scripts/test installs it.
func TestDashboardQueriesParse(t *testing.T) {
	promtool, err := exec.LookPath("promtool")
	if err != nil {
		testenv.Missing(t, "promtool is not installed (Debian's prometheus package has it; scripts/test installs it)")
	}
	var b strings.Builder
	b.WriteString("groups:\n  - name: dashboard\n    rules:\n")
	exprs := readDashboard(t).exprs()
	n := 0
	for where, expr := range exprs {
		n++
		q, _ := json.Marshal(grafanaVariables.Replace(expr)) // a JSON string is a YAML string
		fmt.Fprintf(&b, "      # %s\n      - record: dashboard:query_%d\n        expr: %s\n", where, n, q)
	}
	path := filepath.Join(t.TempDir(), "dashboard-queries.yml")
	if err := os.WriteFile(path, []byte(b.String()), 0o600); err != nil {
		t.Fatal(err)
	}
	out, err := exec.Command(promtool, "check", "rules", path).CombinedOutput()
	if err != nil {
		t.Errorf("promtool check rules on the dashboard's queries: %v\n%s\n%s", err, out, b.String())
	}
	if want := fmt.Sprintf("SUCCESS: %d rules found", len(exprs)); !strings.Contains(string(out), want) {
		t.Errorf("promtool: %s; want %q", out, want)
	}
}
