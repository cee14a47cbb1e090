// Package ops holds what an on-call team runs next to incidentlib: a
// Grafana dashboard (grafana-dashboard.json, import it and pick the
// Prometheus data source) and Prometheus alerting rules (alerts.yml). Both
// are built on the metric names GET /metrics exports; ops_test.go scrapes a
// real server, a replica following it through the outbound client, and
// checks every name and every selector label they use.
package ops

import _ "embed"

// Dashboard is grafana-dashboard.json.
//
//go:embed grafana-dashboard.json
var Dashboard []byte

// Alerts is alerts.yml.
//
//go:embed alerts.yml
var Alerts []byte
