// Package ops holds no code: its folder is the operations side of
// snowfence serve, and its tests keep that side true to the code.
//
//	prometheus/snowfence-rules.yml       Prometheus alerting rules
//	prometheus/snowfence-rules_test.yml  their unit tests (promtool test rules)
//	grafana/snowfence-dashboard.json     a Grafana dashboard over the same metrics
//
// The tests scrape /metrics of a real server.New (with a lease, a clock
// policy, region numbers and a perimeter's callers file, so that every
// series is there) and check that every metric a rule, a rule's unit test
// or a dashboard panel names is one the server or the perimeter exports,
// with the label values it selects; that every alert carries a severity, a
// summary, a description and a runbook link to a heading of
// docs/runbook.md; that every alert's unit tests show it both firing and
// silent; and that the dashboard is well formed, on a ${datasource}
// variable. The rules themselves run under promtool (scripts/test runs
// promtool check rules and promtool test rules); README.md says how to
// load them.
package ops
