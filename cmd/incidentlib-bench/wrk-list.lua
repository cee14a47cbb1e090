-- wrk's script for the list page (graphql.go's ListPageQuery, first: 20),
-- for a client outside the server's process (docs/performance.md, "Keep-alive
-- connections take turns (wrk)"):
--   wrk -t1 -c32 -d5s --latency -s cmd/incidentlib-bench/wrk-list.lua http://127.0.0.1:18080/graphql
wrk.method = "POST"
wrk.headers["Content-Type"] = "application/json"
wrk.body = '{"query":"query ListPage($first: Int) { incidents(first: $first) { nodes { id title organization { name incidentCount } symptoms { label } components { label } related { id title organization { name } related { id } } recurrenceOf { id title } recurrences { id } } } }","variables":{"first":20}}'
