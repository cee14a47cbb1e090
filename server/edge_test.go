package server_test

import (
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"os"
	"strings"
	"testing"

	"github.com/incidentlib/incidentlib/server"
	"github.com/incidentlib/incidentlib/server/gqledge"
)

// Tests of the GraphQL edge's request handling through the real handler:
// the one decoder of request parameters, the coercion of variables, the
// bounds of metric labels, the introspection bound, and the favicon.

// noDataEntry fails unless raw is a response without a data entry (a
// request error: it failed before execution).
func noDataEntry(t *testing.T, raw []byte) {
	t.Helper()
	var m map[string]json.RawMessage
	if err := json.Unmarshal(raw, &m); err != nil {
		t.Fatalf("not a JSON object: %.300s", raw)
	}
	if _, ok := m["data"]; ok {
		t.Fatalf("a request error with a data entry: %.300s", raw)
	}
}

// noErrorLogged fails if the server logged at ERROR or a resolver panic.
func noErrorLogged(t *testing.T, hs *hostileServer) {
	t.Helper()
	log := hs.log.String()
	for _, bad := range []string{`"level":"ERROR"`, "missing operation context", "panic"} {
		if strings.Contains(log, bad) {
			t.Fatalf("the log has %q:\n%.2000s", bad, log)
		}
	}
}

// TestMalformedRequestBodies: whatever a client gets wrong in the body of
// a POST (or the parameters of a GET) is BAD_REQUEST with status 400, the
// byte offset where JSON parsing stopped when it did not parse, no data
// entry, nothing run or read, and nothing logged at ERROR; never INTERNAL.
func TestMalformedRequestBodies(t *testing.T) {
	hs := newHostileServer(t, seedIncidents(t), server.Config{})
	deep := `{"query": "{ __typename }", "variables": {"v": ` + strings.Repeat("[", 100_000) + strings.Repeat("]", 100_000) + `}}`
	cases := []struct {
		name   string
		body   string
		offset int64 // -1: none expected
	}{
		{"BrokenJSON", `{"query": `, 10},
		{"BrokenJSONMidway", `{"query": "{ __typename }", "variables": {"a": }}`, int64(strings.Index(`{"query": "{ __typename }", "variables": {"a": }}`, "}}"))},
		{"QueryNumber", `{"query": 42}`, -1},
		{"QueryObject", `{"query": {"q": "{ __typename }"}}`, -1},
		{"OperationNameNumber", `{"query": "{ __typename }", "operationName": 1}`, -1},
		{"VariablesString", `{"query": "{ __typename }", "variables": "str"}`, -1},
		{"VariablesArray", `{"query": "{ __typename }", "variables": [1]}`, -1},
		{"ExtensionsString", `{"query": "{ __typename }", "extensions": "str"}`, -1},
		{"RawNUL", "{\"query\": \"{ __typename }\x00\"}", 25},
		{"NULAfterBody", "{\"query\": \"{ __typename }\"}\x00", 27},
		{"TrailingGarbage", `{"query": "{ __typename }"} x`, 28},
		{"SecondObject", `{"query": "{ __typename }"}{"query": "{ __typename }"}`, 27},
		{"BadUTF8", "{\"query\": \"{ __typename } \xff\"}", 26},
		{"DeepNesting", deep, int64(strings.Index(deep, "[") + 62)}, // the 65th level
		{"Null", `null`, -1},
		{"NoQuery", `{"qeury": "{ __typename }"}`, -1},
		{"EmptyQuery", `{"query": ""}`, -1},
		{"KeysMatchExactly", `{"QUERY": "{ __typename }"}`, -1},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			for _, accept := range []string{"application/graphql-response+json", "application/json"} {
				before := hs.work()
				r := hs.postBody(t, []byte(c.body), "Accept", accept)
				if r.status != http.StatusBadRequest || r.code() != gqledge.CodeBadRequest || len(r.Errors) != 1 {
					t.Fatalf("%s: status %d code %q: %.300s", accept, r.status, r.code(), r.raw)
				}
				noDataEntry(t, r.raw)
				off, has := r.Errors[0].Extensions["offset"].(float64)
				if c.offset >= 0 && (!has || int64(off) != c.offset) {
					t.Errorf("offset %v, want %d: %s", r.Errors[0].Extensions["offset"], c.offset, r.raw)
				}
				if c.offset < 0 && has {
					t.Errorf("an offset for JSON that parsed: %s", r.raw)
				}
				if hs.work() != before {
					t.Fatalf("a malformed request ran resolvers or read the store")
				}
			}
		})
	}
	t.Run("InABatch", func(t *testing.T) {
		r := hs.postBody(t, []byte(`[{"query": "{ __typename }"}, {"query": 42}]`))
		var out []json.RawMessage
		if r.status != 200 || json.Unmarshal(r.raw, &out) != nil || len(out) != 2 ||
			!bytes.Contains(out[0], []byte(`"__typename"`)) || !bytes.Contains(out[1], []byte(gqledge.CodeBadRequest)) {
			t.Fatalf("%d %s", r.status, r.raw)
		}
	})
	t.Run("BatchTrailingGarbage", func(t *testing.T) {
		r := hs.postBody(t, []byte(`[{"query": "{ __typename }"}] x`))
		if r.status != 400 || r.code() != gqledge.CodeBadRequest {
			t.Fatalf("%d %s", r.status, r.raw)
		}
	})
	t.Run("GET", func(t *testing.T) {
		for name, params := range map[string]url.Values{
			"VariablesBroken":   {"query": {"{ __typename }"}, "variables": {`{"a": `}},
			"VariablesTrailing": {"query": {"{ __typename }"}, "variables": {`{"a": 1} x`}},
			"VariablesString":   {"query": {"{ __typename }"}, "variables": {`"str"`}},
			"ExtensionsArray":   {"query": {"{ __typename }"}, "extensions": {`[]`}},
			"QueryBadUTF8":      {"query": {"{ __typename \xff }"}},
			"NoQuery":           {"operationName": {"Q"}},
		} {
			req, _ := http.NewRequest(http.MethodGet, hs.URL+"/graphql?"+params.Encode(), nil)
			r := hs.do(t, req)
			if r.status != 400 || r.code() != gqledge.CodeBadRequest {
				t.Fatalf("%s: %d %s", name, r.status, r.raw)
			}
			noDataEntry(t, r.raw)
		}
	})
	t.Run("EscapedNULIsASyntaxError", func(t *testing.T) {
		// Well-formed JSON whose document holds U+0000, which GraphQL
		// source text may not: the parser's error, no data, not INTERNAL.
		r := hs.postBody(t, []byte(`{"query": "{ __typename }\u0000"}`))
		if r.status != 400 || r.code() != "GRAPHQL_PARSE_FAILED" {
			t.Fatalf("%d %s", r.status, r.raw)
		}
		noDataEntry(t, r.raw)
	})
	t.Run("WellFormedStillServed", func(t *testing.T) {
		for _, body := range []string{
			`{"query": "{ __typename }"}`,
			` {"query": "{ __typename }", "variables": null, "extensions": null, "operationName": null} ` + "\n",
			`{"query": "{ __typename }", "variables": {}, "extensions": {}, "unknown": [1, {"x": 2}]}`,
		} {
			r := hs.postBody(t, []byte(body))
			if r.status != 200 || len(r.Errors) != 0 || !bytes.Contains(r.raw, []byte(`{"data":{"__typename":"Query"}`)) {
				t.Fatalf("%q: %d %s", body, r.status, r.raw)
			}
		}
	})
	noErrorLogged(t, hs)
}

// TestVariableCoercion: variables of the built-in scalars are coerced as
// the GraphQL specification says, at any depth: a string is no Int, an
// Int is 32-bit, a fraction is refused with a message naming the value
// given; a refusal is a request error (no data, nothing run).
func TestVariableCoercion(t *testing.T) {
	hs := newHostileServer(t, seedIncidents(t), server.Config{})
	const page = `query ($n: Int) { incidents(first: $n) { totalCount nodes { id } } }`
	const filtered = `query ($f: IncidentFilter) { incidents(filter: $f, first: 1) { totalCount } }`
	refused := []struct {
		name, q, vars, shows string
	}{
		{"StringAsInt", page, `{"n": "5"}`, `"5"`},
		{"IntOver32Bits", page, `{"n": 2147483648}`, `2147483648`},
		{"IntUnder32Bits", page, `{"n": -2147483649}`, `-2147483649`},
		{"Fraction", page, `{"n": 1.5}`, `1.5`},
		{"BooleanAsInt", page, `{"n": true}`, `true`},
		{"NumberInStringList", filtered, `{"f": {"symptoms": [5]}}`, `5`},
		{"StringAsBoolean", filtered, `{"f": {"reviewed": "true"}}`, `"true"`},
		{"FractionAsID", filtered, `{"f": {"ids": [1.5]}}`, `1.5`},
	}
	for _, c := range refused {
		t.Run(c.name, func(t *testing.T) {
			before := hs.work()
			body := []byte(`{"query": ` + mustJSON(c.q) + `, "variables": ` + c.vars + `}`)
			r := hs.postBody(t, body)
			if r.status != 400 || len(r.Errors) != 1 || r.code() == "INTERNAL" || r.code() == "" {
				t.Fatalf("status %d: %s", r.status, r.raw)
			}
			msg := r.Errors[0].Message
			if !strings.Contains(msg, c.shows) || strings.Contains(msg, "value 0") {
				t.Fatalf("the message does not name the value %s: %q", c.shows, msg)
			}
			noDataEntry(t, r.raw)
			if hs.work().fields != before.fields {
				t.Fatal("resolvers ran")
			}
			// application/json: the same request error, with 200.
			if j := hs.postBody(t, body, "Accept", "application/json"); j.status != 200 || len(j.Errors) != 1 {
				t.Fatalf("as application/json: %d %s", j.status, j.raw)
			}
		})
	}
	for name, c := range map[string]struct{ q, vars, want string }{
		"Int":           {page, `{"n": 2}`, `"totalCount":`},
		"WholeFloat":    {page, `{"n": 2.0}`, `"totalCount":`},
		"Exponent":      {page, `{"n": 1e1}`, `"totalCount":`},
		"IntMax":        {page, `{"n": 2147483647}`, `"FIRST`}, // valid Int, refused by the field's own bound
		"StringList":    {filtered, `{"f": {"symptoms": ["high-latency"], "reviewed": false}}`, `"totalCount":`},
		"SingleForList": {filtered, `{"f": {"symptoms": "high-latency"}}`, `"totalCount":`},
		"IntegerID":     {filtered, `{"f": {"ids": [5]}}`, `"totalCount":0`},
	} {
		t.Run(name, func(t *testing.T) {
			r := hs.postBody(t, []byte(`{"query": `+mustJSON(c.q)+`, "variables": `+c.vars+`}`))
			if c.want == `"FIRST` {
				if r.code() != "INVALID" {
					t.Fatalf("%d %s", r.status, r.raw)
				}
				return
			}
			if r.status != 200 || len(r.Errors) != 0 || !bytes.Contains(r.raw, []byte(c.want)) {
				t.Fatalf("%d %s", r.status, r.raw)
			}
		})
	}
	noErrorLogged(t, hs)
}

func mustJSON(v any) string {
	b, err := json.Marshal(v)
	if err != nil {
		panic(err)
	}
	return string(b)
}

// TestMetricLabelsBounded: 50 POSTs with 50 KB operation names, and 300
// distinct short ones, leave /metrics small: each label a client can
// influence is bounded in length and in number.
func TestMetricLabelsBounded(t *testing.T) {
	hs := newHostileServer(t, seedIncidents(t), server.Config{})
	scrape := func() []byte {
		resp, err := hs.Client().Get(hs.URL + "/metrics")
		if err != nil {
			t.Fatal(err)
		}
		defer resp.Body.Close()
		b, _ := io.ReadAll(resp.Body)
		return b
	}
	before := len(scrape())
	for i := 0; i < 50; i++ {
		name := fmt.Sprintf("Q%d_%s", i, strings.Repeat("x", 50<<10))
		// The document's operation has the long name too: it runs.
		body := []byte(`{"query": ` + mustJSON("query "+name+" { __typename }") + `, "operationName": ` + mustJSON(name) + `}`)
		if r := hs.postBody(t, body); r.status != 200 || len(r.Errors) != 0 {
			t.Fatalf("%d %.300s", r.status, r.raw)
		}
		// An operationName the document does not have: an error counted
		// under it.
		body = []byte(`{"query": "{ __typename }", "operationName": ` + mustJSON(name+"y") + `}`)
		if r := hs.postBody(t, body); len(r.Errors) == 0 {
			t.Fatalf("%d %.300s", r.status, r.raw)
		}
	}
	// Before the bound these 100 requests made /metrics 190 MB (138 MB
	// in the issue); now each long name is one short label.
	if n := len(scrape()); n > 512<<10 {
		t.Fatalf("/metrics grew from %d to %d bytes after 50 long names", before, n)
	}
	for i := 0; i < 300; i++ {
		name := fmt.Sprintf("Short%d", i)
		body := []byte(`{"query": ` + mustJSON("query "+name+" { __typename }") + `}`)
		if r := hs.postBody(t, body); r.status != 200 {
			t.Fatalf("%d %.300s", r.status, r.raw)
		}
	}
	// Names that are no GraphQL names, such as a client may send.
	for i := 0; i < 20; i++ {
		body := []byte(`{"query": "{ __typename }", "operationName": ` + mustJSON(fmt.Sprintf("a b\n%d <\u202e>", i)) + `}`)
		hs.postBody(t, body)
	}
	after := scrape()
	// The cap of 200 operation labels, every one used in the two
	// histograms by operation, is about 0.95 MB.
	const bound = 2 << 20
	if len(after) > bound {
		t.Fatalf("/metrics grew from %d to %d bytes, over %d", before, len(after), bound)
	}
	for _, want := range []string{`operation="long:`, `operation="other"`, `operation="invalid"`} {
		if !bytes.Contains(after, []byte(want)) {
			t.Errorf("/metrics has no %s", want)
		}
	}
	for _, line := range strings.Split(string(after), "\n") {
		if len(line) > 500 {
			t.Fatalf("a line of %d bytes: %.200s", len(line), line)
		}
	}
	t.Logf("/metrics: %d bytes before, %d after", before, len(after))
}

// TestPlaygroundIntrospection: the introspection queries of GraphiQL and
// of the common clients and code generators pass the limits at their
// defaults, and return the schema; a hostile deep introspection is still
// refused, and the depth limit still bounds data.
func TestPlaygroundIntrospection(t *testing.T) {
	hs := newHostileServer(t, seedIncidents(t), server.Config{})
	for _, file := range []string{"graphiql.graphql", "full.graphql"} {
		t.Run(file, func(t *testing.T) {
			q, err := os.ReadFile("testdata/introspection/" + file)
			if err != nil {
				t.Fatal(err)
			}
			body := []byte(`{"query": ` + mustJSON(string(q)) + `, "operationName": "IntrospectionQuery"}`)
			r := hs.postBody(t, body)
			if r.status != 200 || len(r.Errors) != 0 || !bytes.Contains(r.raw, []byte(`"name":"incidents"`)) {
				t.Fatalf("%d %.500s", r.status, r.raw)
			}
		})
	}
	ofTypes := func(n int) string {
		return `{ __type(name: "Incident") { fields { type { ` + strings.Repeat("ofType { ", n) + "name" + strings.Repeat(" }", n) + ` } } } }`
	}
	t.Run("NineOfTypesAndMore", func(t *testing.T) {
		if r := hs.post(t, ofTypes(16), nil); r.status != 200 || len(r.Errors) != 0 {
			t.Fatalf("%d %.300s", r.status, r.raw)
		}
	})
	t.Run("HostileDeepIntrospection", func(t *testing.T) {
		for _, q := range []string{
			ofTypes(40),
			// Through fragments, as GraphiQL's query spreads them.
			`{ __schema { types { ...T } } } fragment T on __Type { ofType { ...U } } fragment U on __Type { ` +
				strings.Repeat("ofType { ", 30) + "name" + strings.Repeat(" }", 30) + ` }`,
		} {
			r := hs.post(t, q, nil)
			if r.status != 400 || r.code() != gqledge.CodeDepthLimit {
				t.Fatalf("%d %.300s", r.status, r.raw)
			}
			noDataEntry(t, r.raw)
		}
	})
	t.Run("DataStillBounded", func(t *testing.T) {
		q := `{ incident(id: "IL-0213") { ...R } } fragment R on Incident { ` +
			strings.Repeat("related { ", 13) + "id" + strings.Repeat(" }", 13) + ` }`
		if r := hs.post(t, q, nil); r.status != 400 || r.code() != gqledge.CodeDepthLimit {
			t.Fatalf("%d %.300s", r.status, r.raw)
		}
	})
}

// TestFavicon: the icon browsers ask for on every page load is served,
// cacheable, not a 404.
func TestFavicon(t *testing.T) {
	hs := newHostileServer(t, seedIncidents(t), server.Config{})
	resp, err := hs.Client().Get(hs.URL + "/favicon.ico")
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	if resp.StatusCode != 200 || resp.Header.Get("Content-Type") != "image/x-icon" ||
		!strings.Contains(resp.Header.Get("Cache-Control"), "max-age=") || len(b) < 6 || !bytes.HasPrefix(b, []byte{0, 0, 1, 0}) {
		t.Fatalf("%d %v %d bytes", resp.StatusCode, resp.Header, len(b))
	}
}
