package testutil

import (
	"bytes"
	"encoding/json"
	"io"
	"net/http"
	"net/http/httptest"
	"net/url"
	"strconv"
	"strings"
	"testing"

	"github.com/incidentlib/incidentlib"
	"github.com/incidentlib/incidentlib/gen"
	"github.com/incidentlib/incidentlib/seeds"
)

// SeedIncidents are the seed incidents (seeds.Incidents).
func SeedIncidents(tb testing.TB) []*incidentlib.Incident {
	tb.Helper()
	incs, err := seeds.Incidents()
	if err != nil {
		tb.Fatal(err)
	}
	return incs
}

// Corpus is n generated incidents over the seed taxonomy, from IL-1000 on,
// the same for the same seed.
func Corpus(tb testing.TB, n int, seed int64) []*incidentlib.Incident {
	tb.Helper()
	incs, err := gen.Generate(gen.Options{Count: n, Seed: seed, FirstID: 1000, Taxonomy: seeds.MustTaxonomy()})
	if err != nil {
		tb.Fatal(err)
	}
	return incs
}

// ListPageQuery is the list page of the relations issue.
const ListPageQuery = `query($n: Int) { incidents(first: $n) { nodes { id title organization { name incidentCount }
	symptoms { label } components { label }
	related { id title organization { name } related { id } }
	recurrenceOf { id title } recurrences { id } } } }`

// NoDataEntry fails unless raw is a response without a data entry (a
// request error: it failed before execution).
func NoDataEntry(tb testing.TB, raw []byte) {
	tb.Helper()
	var m map[string]json.RawMessage
	if err := json.Unmarshal(raw, &m); err != nil {
		tb.Fatalf("not a JSON object: %.300s", raw)
	}
	if _, ok := m["data"]; ok {
		tb.Fatalf("a request error with a data entry: %.300s", raw)
	}
}

// MustJSON is v in JSON.
func MustJSON(v any) string {
	b, err := json.Marshal(v)
	if err != nil {
		panic(err)
	}
	return string(b)
}

// Response is one HTTP exchange, bytes and all.
type Response struct {
	Status int
	Header http.Header
	Body   []byte
}

// Code is the code of the response's first GraphQL error, "" if it has
// none (or is not a GraphQL response).
func (r *Response) Code() string {
	var out struct {
		Errors []struct {
			Extensions map[string]any `json:"extensions"`
		} `json:"errors"`
	}
	_ = json.Unmarshal(r.Body, &out)
	if len(out.Errors) == 0 {
		return ""
	}
	c, _ := out.Errors[0].Extensions["code"].(string)
	return c
}

// Do sends req with hs's client and reads the whole answer.
func Do(tb testing.TB, hs *httptest.Server, req *http.Request) *Response {
	tb.Helper()
	resp, body := exchange(tb, hs.Client(), req)
	return &Response{resp.StatusCode, resp.Header, body}
}

// RoundTrip sends req (with http.DefaultClient) and returns the response
// with its whole body read.
func RoundTrip(tb testing.TB, req *http.Request) (*http.Response, []byte) {
	tb.Helper()
	return exchange(tb, http.DefaultClient, req)
}

func exchange(tb testing.TB, c *http.Client, req *http.Request) (*http.Response, []byte) {
	tb.Helper()
	resp, err := c.Do(req)
	if err != nil {
		tb.Fatal(err)
	}
	defer resp.Body.Close()
	body, err := io.ReadAll(resp.Body)
	if err != nil {
		tb.Fatal(err)
	}
	return resp, body
}

// SSEPost is a POST of the GraphQL document doc to base's /graphql that
// asks for an SSE stream.
func SSEPost(base, doc string) *http.Request {
	body, _ := json.Marshal(map[string]any{"query": doc})
	req, _ := http.NewRequest(http.MethodPost, base+"/graphql", bytes.NewReader(body))
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("Accept", "text/event-stream")
	return req
}

// PostGraphQL sends a GraphQL request body to hs's /graphql by POST,
// asking for application/graphql-response+json unless headers (name,
// value pairs) say otherwise.
func PostGraphQL(tb testing.TB, hs *httptest.Server, body map[string]any, headers ...string) *Response {
	tb.Helper()
	b, _ := json.Marshal(body)
	req, _ := http.NewRequest(http.MethodPost, hs.URL+"/graphql", bytes.NewReader(b))
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("Accept", "application/graphql-response+json") // unless headers say otherwise
	for i := 0; i+1 < len(headers); i += 2 {
		req.Header.Set(headers[i], headers[i+1])
	}
	return Do(tb, hs, req)
}

// GetGraphQL sends a GraphQL request to hs's /graphql by GET; params are
// the URL parameters, headers as for PostGraphQL.
func GetGraphQL(tb testing.TB, hs *httptest.Server, params url.Values, headers ...string) *Response {
	tb.Helper()
	req, _ := http.NewRequest(http.MethodGet, hs.URL+"/graphql?"+params.Encode(), nil)
	req.Header.Set("Accept", "application/graphql-response+json") // unless headers say otherwise
	for i := 0; i+1 < len(headers); i += 2 {
		req.Header.Set(headers[i], headers[i+1])
	}
	return Do(tb, hs, req)
}

// Metric returns the value of one sample of hs's /metrics (name with
// labels as printed, such as
// `incidentlib_response_cache_requests_total{outcome="hit"}`), failing if
// it is not there.
func Metric(tb testing.TB, hs *httptest.Server, sample string) float64 {
	tb.Helper()
	resp, err := hs.Client().Get(hs.URL + "/metrics")
	if err != nil {
		tb.Fatal(err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	v, ok, err := sampleOf(b, sample)
	switch {
	case err != nil:
		tb.Fatalf("metric %s: %v", sample, err)
	case !ok:
		tb.Fatalf("no metric %s in /metrics", sample)
	}
	return v
}

// sampleOf finds one sample in the text of /metrics.
func sampleOf(text []byte, sample string) (v float64, found bool, err error) {
	for _, line := range strings.Split(string(text), "\n") {
		if s, ok := strings.CutPrefix(line, sample+" "); ok {
			v, err := strconv.ParseFloat(s, 64)
			return v, true, err
		}
	}
	return 0, false, nil
}
