package gqledge

import (
	"bytes"
	"context"
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"net/url"
	"path/filepath"
	"reflect"
	"strconv"
	"strings"
	"testing"

	"github.com/99designs/gqlgen/graphql"
	"github.com/99designs/gqlgen/graphql/executor"
	"github.com/99designs/gqlgen/graphql/handler"
	"github.com/99designs/gqlgen/graphql/handler/lru"
	"github.com/99designs/gqlgen/graphql/handler/transport"
	"github.com/vektah/gqlparser/v2/ast"

	"github.com/incidentlib/incidentlib"
	"github.com/incidentlib/incidentlib/gen"
	"github.com/incidentlib/incidentlib/graph"
	"github.com/incidentlib/incidentlib/seeds"
	"github.com/incidentlib/incidentlib/server/metrics"
	"github.com/incidentlib/incidentlib/storage"
)

// TestResponseBytes runs the same requests through the server's transports
// and through gqlgen's own transport.GET and transport.POST, over one
// executor of the real schema, and requires the same status, content type
// and body, byte for byte: the one-pass writer must write what json.Marshal
// writes. The corpus holds text with every character encoding/json
// escapes. It also checks that the edge itself answers through them.
func TestResponseBytes(t *testing.T) {
	tax := seeds.MustTaxonomy()
	db, err := storage.Open(filepath.Join(t.TempDir(), "test.db"), storage.Options{Taxonomy: tax, RecordCache: 1000})
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	incs, err := gen.Generate(gen.Options{Count: 300, Seed: 7, Taxonomy: tax})
	if err != nil {
		t.Fatal(err)
	}
	odd := *incs[0]
	odd.Title = incidentlib.Text{En: "R&D <script>alert(1)</script> \u2028line\u2029para — done", Ko: "연구 & 개발 <b>"}
	odd.Summary = incidentlib.Text{En: "tab\there \"quoted\" back\\slash\nnewline"}
	odd.Docs = []json.RawMessage{json.RawMessage(`{ "a" : "<&>\u2028" , "b" : [1, 2] }`)}
	odd.Extra = incidentlib.Extra{"x_note": json.RawMessage(`"<tag> & more"`)}
	incs[0] = &odd
	if _, err := db.Incidents().ImportIncidents(context.Background(), incs, incidentlib.ImportOptions{KeepUpdatedAt: true}); err != nil {
		t.Fatal(err)
	}
	resolver := &graph.Resolver{Incidents: db.Incidents(), Organizations: db.Taxonomies(), Taxonomy: tax}
	exec := executor.New(graph.NewExecutableSchema(graph.Config{Resolvers: resolver, Complexity: graph.Complexity()}))
	exec.SetQueryCache(lru.New[*ast.QueryDocument](100))
	exec.Use(costExtension{})
	through := func(tr graphql.Transport) http.Handler {
		return withLang(resolver.Middleware(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			tr.Do(w, r.WithContext(graphql.StartOperationTrace(r.Context())), exec)
		})))
	}
	ours := map[string]http.Handler{
		http.MethodGet:  through(getTransport{transport.GET{}}),
		http.MethodPost: through(postTransport{POST: transport.POST{}, params: &memo[*decodedBody]{}}),
	}
	gqlgens := map[string]http.Handler{
		http.MethodGet:  through(transport.GET{}),
		http.MethodPost: through(transport.POST{}),
	}

	list := `query ($first: Int) { incidents(first: $first) { nodes { id title organization { name incidentCount } symptoms { label } components { label } related { id title organization { name } related { id } } recurrenceOf { id title } recurrences { id } } } }`
	oddQuery := `{ incident(id: "` + odd.ID + `") { id title summary docs extra koTitle: title(lang: KO) } }`
	post := func(body string, header ...string) *http.Request {
		r := httptest.NewRequest(http.MethodPost, "/graphql", strings.NewReader(body))
		r.Header.Set("Content-Type", "application/json")
		for i := 0; i+1 < len(header); i += 2 {
			r.Header.Set(header[i], header[i+1])
		}
		return r
	}
	get := func(query string, vars string, header ...string) *http.Request {
		v := url.Values{"query": {query}}
		if vars != "" {
			v.Set("variables", vars)
		}
		r := httptest.NewRequest(http.MethodGet, "/graphql?"+v.Encode(), nil)
		for i := 0; i+1 < len(header); i += 2 {
			r.Header.Set(header[i], header[i+1])
		}
		return r
	}
	body := func(q string, vars map[string]any) string {
		b, _ := json.Marshal(map[string]any{"query": q, "variables": vars})
		return string(b)
	}
	// Where the transports differ from gqlgen's on purpose: a request that
	// fails before execution has no data entry (requestErrors), and a
	// malformed one is BAD_REQUEST with the offset (params.go).
	const (
		same = iota
		noData
		badRequest
	)
	cases := []struct {
		name string
		req  func() *http.Request
		diff int
	}{
		{"ListPage", func() *http.Request { return post(body(list, map[string]any{"first": 20})) }, same},
		{"ListPageKorean", func() *http.Request { return post(body(list, map[string]any{"first": 5}), "Accept-Language", "ko") }, same},
		{"EscapedText", func() *http.Request { return post(body(oddQuery, nil)) }, same},
		{"AcceptJSON", func() *http.Request { return post(body(oddQuery, nil), "Accept", "application/json") }, same},
		{"AcceptOther", func() *http.Request { return post(body(oddQuery, nil), "Accept", "text/html") }, same},
		{"AcceptAny", func() *http.Request { return post(body(oddQuery, nil), "Accept", "*/*") }, same},
		{"FieldError", func() *http.Request { return post(body(list, map[string]any{"first": 1000})) }, same},
		{"ParseError", func() *http.Request { return post(body(`{ incidents(`, nil)) }, noData},
		{"ParseErrorAcceptJSON", func() *http.Request { return post(body(`{ incidents(`, nil), "Accept", "application/json") }, noData},
		{"ValidationError", func() *http.Request { return post(body(`{ nope }`, nil)) }, noData},
		{"BadBody", func() *http.Request { return post(`{"query": `) }, badRequest},
		{"GetListPage", func() *http.Request { return get(list, `{"first": 3}`) }, same},
		{"GetEscapedText", func() *http.Request { return get(oddQuery, "") }, same},
		{"GetBadVariables", func() *http.Request { return get(list, `{"first": `) }, badRequest},
		{"GetMutation", func() *http.Request { return get(`mutation { x }`, "") }, noData},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			got, want := httptest.NewRecorder(), httptest.NewRecorder()
			r := c.req()
			ours[r.Method].ServeHTTP(got, r)
			r = c.req()
			gqlgens[r.Method].ServeHTTP(want, r)
			if got.Code != want.Code {
				t.Errorf("status %d, gqlgen's transport %d", got.Code, want.Code)
			}
			if g, w := got.Header().Get("Content-Type"), want.Header().Get("Content-Type"); g != w {
				t.Errorf("Content-Type %q, gqlgen's transport %q", g, w)
			}
			wantBody := want.Body.Bytes()
			switch c.diff {
			case noData:
				if !bytes.Contains(wantBody, []byte(`,"data":null`)) {
					t.Fatalf("gqlgen's transport answered %s", wantBody)
				}
				wantBody = bytes.Replace(wantBody, []byte(`,"data":null`), nil, 1)
			case badRequest:
				var resp struct {
					Errors []struct{ Extensions map[string]any }
					Data   *json.RawMessage
				}
				raw := bytes.Contains(got.Body.Bytes(), []byte(`"data"`))
				if err := json.Unmarshal(got.Body.Bytes(), &resp); err != nil || raw || len(resp.Errors) != 1 ||
					resp.Errors[0].Extensions["code"] != CodeBadRequest || resp.Errors[0].Extensions["offset"] == nil {
					t.Errorf("a malformed request answered %s", got.Body.Bytes())
				}
				return
			}
			if !bytes.Equal(got.Body.Bytes(), wantBody) {
				t.Errorf("body differs:\n got %s\nwant %s", got.Body.Bytes(), wantBody)
			}
			if cl := got.Header().Get("Content-Length"); cl != "" && cl != strconv.Itoa(got.Body.Len()) {
				t.Errorf("Content-Length %s for a body of %d bytes", cl, got.Body.Len())
			}
		})
	}
	t.Run("Edge", func(t *testing.T) {
		m, err := metrics.New(nil)
		if err != nil {
			t.Fatal(err)
		}
		gql := handler.New(graph.NewExecutableSchema(graph.Config{Resolvers: resolver, Complexity: graph.Complexity()}))
		queryCache := lru.New[*ast.QueryDocument](100)
		gql.SetQueryCache(queryCache)
		edge, err := New(Options{ResponseCacheBytes: -1}, seqZero{}, m, gql, queryCache)
		if err != nil {
			t.Fatal(err)
		}
		rec := httptest.NewRecorder()
		edge.GraphQL(resolver.Middleware(gql)).ServeHTTP(rec, post(body(oddQuery, nil)))
		b := rec.Body.Bytes()
		if rec.Code != http.StatusOK || rec.Header().Get("Content-Length") != strconv.Itoa(len(b)) {
			t.Fatalf("status %d, Content-Length %q for %d bytes: the server does not answer through the one-pass writer", rec.Code, rec.Header().Get("Content-Length"), len(b))
		}
		if !bytes.Contains(b, []byte(`R\u0026D \u003cscript\u003e`)) || !bytes.Contains(b, []byte(`\u2028line\u2029para — done`)) {
			t.Errorf("the text is not escaped as encoding/json escapes it: %s", b)
		}
		var resp graphql.Response
		if err := json.Unmarshal(b, &resp); err != nil {
			t.Fatal(err)
		}
		if again, _ := json.Marshal(&resp); !bytes.Equal(again, b) {
			t.Errorf("json.Marshal writes\n%s\nthe server wrote\n%s", again, b)
		}
	})
}

// seqZero is a change log at sequence 0, for an edge whose cache is off.
type seqZero struct{ incidentlib.ChangeLog }

func (seqZero) Seq() uint64 { return 0 }

// costExtension adds an extension to every response, as the server's cost
// limit does, so that the one-pass writer's extensions are compared too.
type costExtension struct{}

func (costExtension) ExtensionName() string                   { return "TestCost" }
func (costExtension) Validate(graphql.ExecutableSchema) error { return nil }
func (costExtension) InterceptResponse(ctx context.Context, next graphql.ResponseHandler) *graphql.Response {
	resp := next(ctx)
	if resp != nil {
		if resp.Extensions == nil {
			resp.Extensions = map[string]any{}
		}
		resp.Extensions["cost"] = 42
		resp.Extensions["note"] = "<&>"
	}
	return resp
}

// FuzzWriteResponse checks the one-pass writer against json.Marshal on
// strings as gqlgen's executor writes them.
func FuzzWriteResponse(f *testing.F) {
	for _, s := range []string{"", "plain", "a<b>c&d", "\u2028\u2029", "—…→", "\xe2\x80", "\xe2", "연구 & 개발", "\"\\\n\t\x00"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		var data bytes.Buffer
		data.WriteString(`{"s":`)
		graphql.MarshalString(s).MarshalGQL(&data)
		data.WriteString(`,"list":[`)
		graphql.MarshalString(s + "<").MarshalGQL(&data)
		data.WriteString(`]}`)
		resp := &graphql.Response{Data: data.Bytes()}
		want, err := json.Marshal(resp)
		if err != nil {
			t.Skip() // not JSON encoding/json accepts
		}
		rec := httptest.NewRecorder()
		writeResponse(rec, resp)
		if !bytes.Equal(rec.Body.Bytes(), want) {
			t.Fatalf("got  %q\nwant %q", rec.Body.Bytes(), want)
		}
		if cl := rec.Header().Get("Content-Length"); cl != strconv.Itoa(len(want)) {
			t.Fatalf("Content-Length %s, body %d bytes", cl, len(want))
		}
	})
}

// TestDecodeParamsCopies: the POST transport decodes a body once
// (Edge.params) and gives each request its own variables and extensions:
// gqlgen's coercion of variables writes into the maps of input objects, so
// a shared map would carry one request's writes into the next and race
// between concurrent requests.
func TestDecodeParamsCopies(t *testing.T) {
	m := &memo[*decodedBody]{}
	body := []byte(`{"query":"query($f: IncidentFilter) { incidents(filter: $f) { totalCount } }","variables":{"f":{"symptoms":["a"],"dateFrom":"2020-01-01","n":1}},"extensions":{"persistedQuery":{"version":1}}}`)
	want := map[string]any{"f": map[string]any{"symptoms": []any{"a"}, "dateFrom": "2020-01-01", "n": json.Number("1")}}
	a, _, err := decodeParams(m, body)
	if err != nil {
		t.Fatal(err)
	}
	if _, ok := m.getBytes(body); !ok {
		t.Fatal("the decoded body is not kept")
	}
	if !reflect.DeepEqual(a.Variables, want) {
		t.Fatalf("variables %#v, want %#v", a.Variables, want)
	}
	f := a.Variables["f"].(map[string]any)
	f["dateFrom"] = "changed"
	f["symptoms"].([]any)[0] = "changed"
	a.Extensions["persistedQuery"].(map[string]any)["version"] = 2
	a.Query = "changed"
	b, _, err := decodeParams(m, body)
	if err != nil {
		t.Fatal(err)
	}
	if !reflect.DeepEqual(b.Variables, want) || b.Extensions["persistedQuery"].(map[string]any)["version"] != json.Number("1") || b.Query == "changed" {
		t.Fatalf("one request's changes reached the next: %#v %#v %q", b.Variables, b.Extensions, b.Query)
	}
	bad := []byte(`{"query": 1}`)
	if _, _, err := decodeParams(m, bad); err == nil {
		t.Fatal("a body whose query is not a string was decoded")
	}
	if _, ok := m.getBytes(bad); ok {
		t.Fatal("a body that does not decode was kept")
	}
}
