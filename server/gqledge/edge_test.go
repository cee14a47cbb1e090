package gqledge_test

import (
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"strings"
	"testing"

	"github.com/incidentlib/incidentlib/internal/testutil"
	"github.com/incidentlib/incidentlib/server"
	"github.com/incidentlib/incidentlib/server/gqledge"
)

// Tests of the GraphQL edge's request handling through the real handler:
// the one decoder of request parameters, the coercion of variables, the
// bounds of metric labels (the introspection bound and the favicon are
// server's: server/edge_test.go).

// noErrorLogged fails if the server logged at ERROR or a resolver panic.
func noErrorLogged(t *testing.T, hs *testutil.CountingServer) {
	t.Helper()
	log := hs.Log.String()
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
	hs := testutil.NewCountingServer(t, seedIncidents(t), server.Config{})
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
				before := hs.Work()
				r := hs.PostBody(t, []byte(c.body), "Accept", accept)
				if r.Status != http.StatusBadRequest || r.Code() != gqledge.CodeBadRequest || len(r.Errors) != 1 {
					t.Fatalf("%s: status %d code %q: %.300s", accept, r.Status, r.Code(), r.Raw)
				}
				testutil.NoDataEntry(t, r.Raw)
				off, has := r.Errors[0].Extensions["offset"].(float64)
				if c.offset >= 0 && (!has || int64(off) != c.offset) {
					t.Errorf("offset %v, want %d: %s", r.Errors[0].Extensions["offset"], c.offset, r.Raw)
				}
				if c.offset < 0 && has {
					t.Errorf("an offset for JSON that parsed: %s", r.Raw)
				}
				if hs.Work() != before {
					t.Fatalf("a malformed request ran resolvers or read the store")
				}
			}
		})
	}
	t.Run("InABatch", func(t *testing.T) {
		r := hs.PostBody(t, []byte(`[{"query": "{ __typename }"}, {"query": 42}]`))
		var out []json.RawMessage
		if r.Status != 200 || json.Unmarshal(r.Raw, &out) != nil || len(out) != 2 ||
			!bytes.Contains(out[0], []byte(`"__typename"`)) || !bytes.Contains(out[1], []byte(gqledge.CodeBadRequest)) {
			t.Fatalf("%d %s", r.Status, r.Raw)
		}
	})
	t.Run("BatchTrailingGarbage", func(t *testing.T) {
		r := hs.PostBody(t, []byte(`[{"query": "{ __typename }"}] x`))
		if r.Status != 400 || r.Code() != gqledge.CodeBadRequest {
			t.Fatalf("%d %s", r.Status, r.Raw)
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
			r := hs.Do(t, req)
			if r.Status != 400 || r.Code() != gqledge.CodeBadRequest {
				t.Fatalf("%s: %d %s", name, r.Status, r.Raw)
			}
			testutil.NoDataEntry(t, r.Raw)
		}
	})
	t.Run("EscapedNULIsASyntaxError", func(t *testing.T) {
		// Well-formed JSON whose document holds U+0000, which GraphQL
		// source text may not: the parser's error, no data, not INTERNAL.
		r := hs.PostBody(t, []byte(`{"query": "{ __typename }\u0000"}`))
		if r.Status != 400 || r.Code() != "GRAPHQL_PARSE_FAILED" {
			t.Fatalf("%d %s", r.Status, r.Raw)
		}
		testutil.NoDataEntry(t, r.Raw)
	})
	t.Run("WellFormedStillServed", func(t *testing.T) {
		for _, body := range []string{
			`{"query": "{ __typename }"}`,
			` {"query": "{ __typename }", "variables": null, "extensions": null, "operationName": null} ` + "\n",
			`{"query": "{ __typename }", "variables": {}, "extensions": {}, "unknown": [1, {"x": 2}]}`,
		} {
			r := hs.PostBody(t, []byte(body))
			if r.Status != 200 || len(r.Errors) != 0 || !bytes.Contains(r.Raw, []byte(`{"data":{"__typename":"Query"}`)) {
				t.Fatalf("%q: %d %s", body, r.Status, r.Raw)
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
	hs := testutil.NewCountingServer(t, seedIncidents(t), server.Config{})
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
			before := hs.Work()
			body := []byte(`{"query": ` + testutil.MustJSON(c.q) + `, "variables": ` + c.vars + `}`)
			r := hs.PostBody(t, body)
			if r.Status != 400 || len(r.Errors) != 1 || r.Code() == "INTERNAL" || r.Code() == "" {
				t.Fatalf("status %d: %s", r.Status, r.Raw)
			}
			msg := r.Errors[0].Message
			if !strings.Contains(msg, c.shows) || strings.Contains(msg, "value 0") {
				t.Fatalf("the message does not name the value %s: %q", c.shows, msg)
			}
			testutil.NoDataEntry(t, r.Raw)
			if hs.Work().Fields != before.Fields {
				t.Fatal("resolvers ran")
			}
			// application/json: the same request error, with 200.
			if j := hs.PostBody(t, body, "Accept", "application/json"); j.Status != 200 || len(j.Errors) != 1 {
				t.Fatalf("as application/json: %d %s", j.Status, j.Raw)
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
			r := hs.PostBody(t, []byte(`{"query": `+testutil.MustJSON(c.q)+`, "variables": `+c.vars+`}`))
			if c.want == `"FIRST` {
				if r.Code() != "INVALID" {
					t.Fatalf("%d %s", r.Status, r.Raw)
				}
				return
			}
			if r.Status != 200 || len(r.Errors) != 0 || !bytes.Contains(r.Raw, []byte(c.want)) {
				t.Fatalf("%d %s", r.Status, r.Raw)
			}
		})
	}
	noErrorLogged(t, hs)
}

// TestMetricLabelsBounded: 50 POSTs with 50 KB operation names, and 300
// distinct short ones, leave /metrics small: each label a client can
// influence is bounded in length and in number.
func TestMetricLabelsBounded(t *testing.T) {
	hs := testutil.NewCountingServer(t, seedIncidents(t), server.Config{})
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
		body := []byte(`{"query": ` + testutil.MustJSON("query "+name+" { __typename }") + `, "operationName": ` + testutil.MustJSON(name) + `}`)
		if r := hs.PostBody(t, body); r.Status != 200 || len(r.Errors) != 0 {
			t.Fatalf("%d %.300s", r.Status, r.Raw)
		}
		// An operationName the document does not have: an error counted
		// under it.
		body = []byte(`{"query": "{ __typename }", "operationName": ` + testutil.MustJSON(name+"y") + `}`)
		if r := hs.PostBody(t, body); len(r.Errors) == 0 {
			t.Fatalf("%d %.300s", r.Status, r.Raw)
		}
	}
	// Before the bound these 100 requests made /metrics 190 MB (138 MB
	// in the issue); now each long name is one short label.
	if n := len(scrape()); n > 512<<10 {
		t.Fatalf("/metrics grew from %d to %d bytes after 50 long names", before, n)
	}
	for i := 0; i < 300; i++ {
		name := fmt.Sprintf("Short%d", i)
		body := []byte(`{"query": ` + testutil.MustJSON("query "+name+" { __typename }") + `}`)
		if r := hs.PostBody(t, body); r.Status != 200 {
			t.Fatalf("%d %.300s", r.Status, r.Raw)
		}
	}
	// Names that are no GraphQL names, such as a client may send.
	for i := 0; i < 20; i++ {
		body := []byte(`{"query": "{ __typename }", "operationName": ` + testutil.MustJSON(fmt.Sprintf("a b\n%d <\u202e>", i)) + `}`)
		hs.PostBody(t, body)
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
