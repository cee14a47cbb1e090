package server

// dashboardExample is the GraphiQL tab of a dashboard: aggregates over a
// filter, counted from the indexes in one query.
var dashboardExample = ExampleTab{Query: `# A dashboard: counts by year, root cause x component, the organizations
# with most incidents and how long detection and resolution took, for one filter.
query Dashboard($filter: IncidentFilter) {
  stats(filter: $filter) {
    count
    byYear(kind: ROOT_CAUSE) { year term { slug label } count }
    pairs(rows: ROOT_CAUSE, columns: COMPONENT) { row { label } column { label } count }
    topOrganizations(first: 10) { organization { slug name } count }
    durations {
      detectedAfter { count p50Seconds p90Seconds maxSeconds }
      resolvedAfter { count p50Seconds p90Seconds maxSeconds }
    }
  }
  organizations(first: 10, orderBy: {field: INCIDENT_COUNT}) {
    nodes { slug name incidentCount }
  }
}
`, Variables: `{"filter": {"dateFrom": "2015-01-01"}}`}
