package ops

import (
	"maps"
	"os"
	"regexp"
	"slices"
	"strings"
	"testing"
	"time"

	"go.yaml.in/yaml/v2"
)

const (
	rulesFile     = "prometheus/snowfence-rules.yml"
	ruleTestsFile = "prometheus/snowfence-rules_test.yml"
	runbookFile   = "../docs/runbook.md"
	runbookPrefix = "docs/runbook.md#"
)

type rule struct {
	Alert       string            `yaml:"alert"`
	Record      string            `yaml:"record"`
	Expr        string            `yaml:"expr"`
	For         string            `yaml:"for"`
	Labels      map[string]string `yaml:"labels"`
	Annotations map[string]string `yaml:"annotations"`
}

type ruleFile struct {
	Groups []struct {
		Name  string `yaml:"name"`
		Rules []rule `yaml:"rules"`
	} `yaml:"groups"`
}

type ruleTests struct {
	RuleFiles []string `yaml:"rule_files"`
	Tests     []struct {
		Name        string `yaml:"name"`
		InputSeries []struct {
			Series string `yaml:"series"`
		} `yaml:"input_series"`
		AlertRuleTest []struct {
			EvalTime  string `yaml:"eval_time"`
			Alertname string `yaml:"alertname"`
			ExpAlerts []struct {
				ExpLabels map[string]string `yaml:"exp_labels"`
			} `yaml:"exp_alerts"`
		} `yaml:"alert_rule_test"`
	} `yaml:"tests"`
}

// readYAML decodes the file at path into v; strict refuses fields v does
// not have (the rules file: a misspelt field would be ignored by this test
// but not by Prometheus). The unit tests' file has fields this test does
// not read (values, exp_annotations).
func readYAML(t *testing.T, path string, v any, strict bool) {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	unmarshal := yaml.Unmarshal
	if strict {
		unmarshal = yaml.UnmarshalStrict
	}
	if err := unmarshal(b, v); err != nil {
		t.Fatalf("%s: %v", path, err)
	}
}

func alerts(t *testing.T) []rule {
	t.Helper()
	var f ruleFile
	readYAML(t, rulesFile, &f, true)
	var rs []rule
	for _, g := range f.Groups {
		rs = append(rs, g.Rules...)
	}
	if len(rs) == 0 {
		t.Fatalf("%s has no rules", rulesFile)
	}
	return rs
}

// runbookAnchors returns the anchors GitHub gives the headings of the
// runbook: lower case, punctuation dropped, spaces as hyphens.
func runbookAnchors(t *testing.T) map[string]bool {
	t.Helper()
	b, err := os.ReadFile(runbookFile)
	if err != nil {
		t.Fatal(err)
	}
	drop := regexp.MustCompile(`[^a-z0-9 _-]`)
	anchors := map[string]bool{}
	inFence := false
	for _, line := range strings.Split(string(b), "\n") {
		if strings.HasPrefix(line, "```") {
			inFence = !inFence
		}
		if inFence || !strings.HasPrefix(line, "#") {
			continue
		}
		h := strings.TrimSpace(strings.TrimLeft(line, "#"))
		anchors[strings.ReplaceAll(drop.ReplaceAllString(strings.ToLower(h), ""), " ", "-")] = true
	}
	return anchors
}

// TestRulesAreComplete checks what every alert must carry; the metrics it
// reads are TestRulesUseExportedMetrics's.
func TestRulesAreComplete(t *testing.T) {
	anchors := runbookAnchors(t)
	names := map[string]bool{}
	for _, r := range alerts(t) {
		if r.Alert == "" {
			t.Errorf("rule %q is not an alert: this file holds alerting rules only", r.Record)
			continue
		}
		if names[r.Alert] {
			t.Errorf("alert %s is defined twice", r.Alert)
		}
		names[r.Alert] = true
		if !strings.HasPrefix(r.Alert, "Snowfence") {
			t.Errorf("alert %s: name it Snowfence…, so that it sorts with the others in Alertmanager", r.Alert)
		}
		// Bounded labels: only severity, from a fixed set.
		for k := range r.Labels {
			if k != "severity" {
				t.Errorf("alert %s: label %s; the rules add only severity", r.Alert, k)
			}
		}
		if s := r.Labels["severity"]; s != "critical" && s != "warning" {
			t.Errorf("alert %s: severity %q, want critical or warning", r.Alert, s)
		}
		if r.For != "" {
			if _, err := time.ParseDuration(r.For); err != nil {
				t.Errorf("alert %s: for %q: %v", r.Alert, r.For, err)
			}
		}
		for _, a := range []string{"summary", "description", "runbook_url"} {
			if strings.TrimSpace(r.Annotations[a]) == "" {
				t.Errorf("alert %s has no %s", r.Alert, a)
			}
		}
		if len(r.Annotations) != 3 {
			t.Errorf("alert %s: annotations %v, want exactly summary, description and runbook_url", r.Alert, slices.Sorted(maps.Keys(r.Annotations)))
		}
		u := r.Annotations["runbook_url"]
		anchor, ok := strings.CutPrefix(u, runbookPrefix)
		if !ok {
			t.Errorf("alert %s: runbook_url %q does not start with %s", r.Alert, u, runbookPrefix)
		} else if !anchors[anchor] {
			t.Errorf("alert %s: runbook_url %q: docs/runbook.md has no heading with anchor #%s", r.Alert, u, anchor)
		}
		if strings.Contains(r.Expr, "label_replace") || strings.Contains(r.Expr, "label_join") {
			t.Errorf("alert %s makes labels in its expression: keep labels bounded", r.Alert)
		}
	}
}

// TestRuleTestsCoverEveryAlert checks the promtool unit tests: each alert
// is shown firing and shown silent, they load this folder's rules, and an
// alert carries no label but severity and the target's own.
func TestRuleTestsCoverEveryAlert(t *testing.T) {
	var f ruleTests
	readYAML(t, ruleTestsFile, &f, false)
	if !slices.Equal(f.RuleFiles, []string{"snowfence-rules.yml"}) {
		t.Errorf("rule_files %v, want [snowfence-rules.yml]", f.RuleFiles)
	}
	fires, silent := map[string]bool{}, map[string]bool{}
	for _, tc := range f.Tests {
		for _, a := range tc.AlertRuleTest {
			if len(a.ExpAlerts) == 0 {
				silent[a.Alertname] = true
			}
			for _, e := range a.ExpAlerts {
				fires[a.Alertname] = true
				for k := range e.ExpLabels {
					if k != "severity" && !targetLabels[k] {
						t.Errorf("test %q: alert %s has label %s; alerts carry only severity, job and instance", tc.Name, a.Alertname, k)
					}
				}
			}
		}
	}
	for _, r := range alerts(t) {
		if !fires[r.Alert] {
			t.Errorf("no unit test shows %s firing", r.Alert)
		}
		if !silent[r.Alert] {
			t.Errorf("no unit test shows %s silent", r.Alert)
		}
		delete(fires, r.Alert)
		delete(silent, r.Alert)
	}
	for a := range fires {
		t.Errorf("unit tests expect alert %s, which no rule defines", a)
	}
	for a := range silent {
		t.Errorf("unit tests expect alert %s, which no rule defines", a)
	}
}

// TestRulesUseExportedMetrics checks every metric and label value the
// rules and their unit tests' input series name against a real scrape.
func TestRulesUseExportedMetrics(t *testing.T) {
	ex := scrape(t)
	for _, r := range alerts(t) {
		sels, err := selectors(r.Expr)
		if err != nil {
			t.Errorf("alert %s: %v", r.Alert, err)
			continue
		}
		if len(sels) == 0 {
			t.Errorf("alert %s reads no metric", r.Alert)
		}
		for _, s := range sels {
			for _, bad := range ex.check(s) {
				t.Errorf("alert %s: %s", r.Alert, bad)
			}
		}
	}
	var f ruleTests
	readYAML(t, ruleTestsFile, &f, false)
	for _, tc := range f.Tests {
		for _, in := range tc.InputSeries {
			s, err := parseSelector(in.Series)
			if err != nil {
				t.Errorf("test %q: %v", tc.Name, err)
				continue
			}
			for _, bad := range ex.check(s) {
				t.Errorf("test %q: input series %s: %s", tc.Name, in.Series, bad)
			}
		}
	}
}
