package gqledge_test

import (
	"bytes"
	"encoding/json"
	"errors"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/incidentlib/incidentlib"
	"github.com/incidentlib/incidentlib/internal/testutil"
	"github.com/incidentlib/incidentlib/seeds"
	"github.com/incidentlib/incidentlib/server"
	"github.com/incidentlib/incidentlib/server/gqledge"
	"github.com/incidentlib/incidentlib/storage"
)

// FuzzDecodeParams sends random POST bodies to the decoder of request
// parameters and through the whole handler. The decoder never panics and
// refuses with a RequestError whose offset lies in the body; the handler
// answers JSON with a GraphQL-over-HTTP status, never INTERNAL, and a body
// the decoder refuses is BAD_REQUEST with 400 and no data entry. Without
// -fuzz only the seeds run; `make test` fuzzes it by count.
func FuzzDecodeParams(f *testing.F) {
	for _, seed := range []string{
		`{"query": "{ __typename }"}`,
		`{"query": "query Q($n: Int) { incidents(first: $n) { totalCount } }", "operationName": "Q", "variables": {"n": 2}}`,
		`{"query": "query ($f: IncidentFilter) { incidents(filter: $f) { totalCount } }", "variables": {"f": {"symptoms": ["high-latency"], "reviewed": true}}}`,
		`{"query": "query ($n: Int) { incidents(first: $n) { totalCount } }", "variables": {"n": "5"}}`,
		`{"query": "query ($n: Int) { incidents(first: $n) { totalCount } }", "variables": {"n": 1.5}}`,
		`{"extensions": {"persistedQuery": {"version": 1, "sha256Hash": "abc"}}}`,
		`[{"query": "{ __typename }"}, {"query": 42}]`,
		`{"query": 42}`,
		`{"query": "{ __typename }", "variables": "str"}`,
		`{"query": "{ __typename }"} x`,
		"{\"query\": \"{ __typename }\x00\"}",
		"{\"query\": \"\xff\"}",
		`{"query": "{ __typename }", "variables": {"a": [[[[[[[[[[[[[[[[[[[[1]]]]]]]]]]]]]]]]]]]}}`,
		`{"query": "{ __schema { types { name } } }"}`,
		`null`, `"str"`, `{`, ``,
	} {
		f.Add([]byte(seed))
	}
	incs, err := seeds.Incidents()
	if err != nil {
		f.Fatal(err)
	}
	db := testutil.ServerStore(f, incs, storage.Options{})
	srv, err := testutil.ServerOn(db, server.Config{}, testutil.ServerParts{})
	if err != nil {
		f.Fatal(err)
	}
	f.Fuzz(func(t *testing.T, body []byte) {
		_, derr := gqledge.DecodeBody(body)
		var rerr *gqledge.RequestError
		if derr != nil {
			if !errors.As(derr, &rerr) {
				t.Fatalf("not a RequestError: %T %v", derr, derr)
			}
			if rerr.Offset < -1 || rerr.Offset > int64(len(body)) {
				t.Fatalf("offset %d outside a body of %d bytes", rerr.Offset, len(body))
			}
		}
		req := httptest.NewRequest(http.MethodPost, "/graphql", bytes.NewReader(body))
		req.Header.Set("Content-Type", "application/json")
		req.Header.Set("Accept", "application/graphql-response+json")
		rec := httptest.NewRecorder()
		srv.ServeHTTP(rec, req)
		raw := rec.Body.Bytes()
		switch rec.Code {
		case 200, 400, 413:
		default:
			t.Fatalf("status %d: %.300s", rec.Code, raw)
		}
		if bytes.Contains(raw, []byte(`"`+incidentlib.EINTERNAL+`"`)) || bytes.Contains(raw, []byte("panic")) && !bytes.Contains(body, []byte("panic")) {
			t.Fatalf("an internal error: %.300s", raw)
		}
		if !json.Valid(raw) {
			t.Fatalf("not JSON: %.300s", raw)
		}
		isObject := len(bytes.TrimLeft(body, " \t\r\n")) > 0 && bytes.TrimLeft(body, " \t\r\n")[0] == '{'
		if derr != nil && isObject {
			var m map[string]json.RawMessage
			if rec.Code != 400 || json.Unmarshal(raw, &m) != nil || m["data"] != nil || !strings.Contains(string(m["errors"]), gqledge.CodeBadRequest) {
				t.Fatalf("a body the decoder refuses (%v) answered %d: %.300s", derr, rec.Code, raw)
			}
		}
	})
}
