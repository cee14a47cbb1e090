package server_test

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync"
	"testing"

	"github.com/incidentlib/incidentlib"
	"github.com/incidentlib/incidentlib/internal/testutil"
	"github.com/incidentlib/incidentlib/seeds"
	"github.com/incidentlib/incidentlib/server"
	"github.com/incidentlib/incidentlib/server/metrics"
	"github.com/incidentlib/incidentlib/storage"
)

const wrToken = "test-admin-token-0123456789"

// wrServer is the real handler with a real store, started with adminToken
// ("" for a read-only server).
type wrServer struct {
	*httptest.Server
	DB *storage.DB
}

func newWriteServer(tb testing.TB, adminToken string) *wrServer {
	tb.Helper()
	m, err := metrics.New(nil) // before the store: TestWriteMetrics counts its commits
	if err != nil {
		tb.Fatal(err)
	}
	db := testutil.ServerStore(tb, nil, storage.Options{RecordCache: 1000, ObserveCommit: m.ObserveCommit})
	ts, _ := testutil.ServerTest(tb, db, server.Config{AdminToken: adminToken}, testutil.ServerParts{Metrics: m})
	return &wrServer{Server: ts, DB: db}
}

type wrResult struct {
	Data   map[string]json.RawMessage `json:"data"`
	Errors []struct {
		Message    string         `json:"message"`
		Extensions map[string]any `json:"extensions"`
	} `json:"errors"`
}

func (r *wrResult) code() string {
	if len(r.Errors) == 0 {
		return ""
	}
	c, _ := r.Errors[0].Extensions["code"].(string)
	return c
}

// do sends one GraphQL operation with the given Authorization header ("" for
// none).
func (s *wrServer) do(tb testing.TB, auth, query string, vars map[string]any) *wrResult {
	tb.Helper()
	body, _ := json.Marshal(map[string]any{"query": query, "variables": vars})
	req, _ := http.NewRequest(http.MethodPost, s.URL+"/graphql", bytes.NewReader(body))
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("Accept", "application/json")
	if auth != "" {
		req.Header.Set("Authorization", auth)
	}
	resp, err := s.Client().Do(req)
	if err != nil {
		tb.Fatal(err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	var r wrResult
	if err := json.Unmarshal(b, &r); err != nil {
		tb.Fatalf("status %d, body %s: %v", resp.StatusCode, b, err)
	}
	return &r
}

// mutate sends a mutation with the admin token and decodes data[field].
func (s *wrServer) mutate(tb testing.TB, query string, vars map[string]any, field string, v any) {
	tb.Helper()
	r := s.do(tb, "Bearer "+wrToken, query, vars)
	if len(r.Errors) > 0 {
		tb.Fatalf("errors: %+v", r.Errors)
	}
	if err := json.Unmarshal(r.Data[field], v); err != nil {
		tb.Fatalf("data.%s: %v (%s)", field, err, r.Data[field])
	}
}

func (s *wrServer) export(tb testing.TB) string {
	tb.Helper()
	var buf bytes.Buffer
	if err := s.DB.Maintenance().Export(context.Background(), &buf); err != nil {
		tb.Fatal(err)
	}
	return buf.String()
}

func (s *wrServer) clean(tb testing.TB) {
	tb.Helper()
	problems, err := s.DB.Maintenance().Check(context.Background())
	if err != nil || len(problems) > 0 {
		tb.Fatalf("check: %v %v", problems, err)
	}
}

type wrUserError struct {
	Field   []string `json:"field"`
	Message string   `json:"message"`
	Code    string   `json:"code"`
}

type wrIncidentPayload struct {
	Incident *struct {
		ID           string  `json:"id"`
		Title        *string `json:"title"`
		UpdatedAt    string  `json:"updatedAt"`
		Organization struct {
			Name string `json:"name"`
		} `json:"organization"`
		Review struct {
			ReviewedAt *string `json:"reviewedAt"`
			ReviewedBy *string `json:"reviewedBy"`
		} `json:"review"`
		RelatedIDs []string `json:"relatedIds"`
	} `json:"incident"`
	UserErrors []wrUserError `json:"userErrors"`
}

const wrUpsert = `mutation($input: IncidentInput!) {
  upsertIncident(input: $input) {
    incident { id title(lang: KO) updatedAt organization { name } review { reviewedAt reviewedBy } relatedIds }
    userErrors { field message code }
  }
}`

func wrInput(id string) map[string]any {
	return map[string]any{"id": id, "org": "Acme", "orgSlug": "acme", "title": map[string]any{"ko": "제목 " + id}}
}

func (s *wrServer) upsert(tb testing.TB, input map[string]any) *wrIncidentPayload {
	tb.Helper()
	var p wrIncidentPayload
	s.mutate(tb, wrUpsert, map[string]any{"input": input}, "upsertIncident", &p)
	return &p
}

// TestMutationsNeedTheAdminToken: without the admin token a mutation is
// refused with its code before anything runs, and the store is as it was.
func TestMutationsNeedTheAdminToken(t *testing.T) {
	rw := newWriteServer(t, wrToken)
	rw.upsert(t, wrInput("IL-0001"))
	ro := newWriteServer(t, "")
	for _, c := range []struct {
		name string
		srv  *wrServer
		auth string
		code string
	}{
		// A server without --admin-token and without API tokens knows no
		// token: every one is UNAUTHENTICATED (it was READ_ONLY before
		// API tokens, which enable writes without --admin-token).
		{"ServerWithoutTokens", ro, "Bearer " + wrToken, incidentlib.EUNAUTHENTICATED},
		{"NoHeader", rw, "", incidentlib.EUNAUTHENTICATED},
		{"NotBearer", rw, "Basic " + wrToken, incidentlib.EUNAUTHENTICATED},
		{"WrongToken", rw, "Bearer " + wrToken + "x", incidentlib.EUNAUTHENTICATED},
		{"TokenPrefix", rw, "Bearer " + wrToken[:len(wrToken)-1], incidentlib.EUNAUTHENTICATED},
	} {
		t.Run(c.name, func(t *testing.T) {
			before, seq := c.srv.export(t), c.srv.DB.Incidents().Seq()
			for _, op := range []struct {
				q    string
				vars map[string]any
			}{
				{wrUpsert, map[string]any{"input": wrInput("IL-0002")}},
				{`mutation { deleteIncident(id: "IL-0001") { deletedId } }`, nil},
				{`mutation { reviewIncident(id: "IL-0001", decision: APPROVE) { incident { id } } }`, nil},
				{`mutation($r: [IncidentInput!]!) { importIncidents(records: $r) { created } }`, map[string]any{"r": []any{wrInput("IL-0003")}}},
			} {
				r := c.srv.do(t, c.auth, op.q, op.vars)
				if r.code() != c.code {
					t.Fatalf("%s: code %q, want %s (%+v)", op.q, r.code(), c.code, r.Errors)
				}
			}
			if c.srv.DB.Incidents().Seq() != seq || c.srv.export(t) != before {
				t.Fatal("a refused mutation changed the store")
			}
		})
	}
	t.Run("QueriesNeedNoToken", func(t *testing.T) {
		r := rw.do(t, "", `{ incident(id: "IL-0001") { id } }`, nil)
		if len(r.Errors) > 0 || !strings.Contains(string(r.Data["incident"]), "IL-0001") {
			t.Fatalf("%+v %s", r.Errors, r.Data["incident"])
		}
	})
	t.Run("BearerIsCaseInsensitive", func(t *testing.T) {
		r := rw.do(t, "bearer "+wrToken, `mutation { reviewIncident(id: "IL-0001", decision: APPROVE) { userErrors { code } } }`, nil)
		if len(r.Errors) > 0 {
			t.Fatal(r.Errors)
		}
	})
}

func TestAdminTokenRefusedAtStart(t *testing.T) {
	db := testutil.ServerStore(t, nil, storage.Options{})
	for _, tok := range []string{"short", "has a space in the middle of it"} {
		if _, err := testutil.ServerOn(db, server.Config{AdminToken: tok}, testutil.ServerParts{}); err == nil {
			t.Errorf("admin token %q was accepted", tok)
		}
	}
}

func TestUpsertIncidentMutation(t *testing.T) {
	s := newWriteServer(t, wrToken)
	t.Run("SmallestInput", func(t *testing.T) {
		p := s.upsert(t, wrInput("IL-0001"))
		if len(p.UserErrors) != 0 || p.Incident == nil {
			t.Fatalf("%+v", p)
		}
		if *p.Incident.Title != "제목 IL-0001" || p.Incident.UpdatedAt == "" || p.Incident.Organization.Name != "Acme" {
			t.Fatalf("%+v", p.Incident)
		}
		r := s.do(t, "", `{ incident(id: "IL-0001") { updatedAt } }`, nil)
		if !strings.Contains(string(r.Data["incident"]), p.Incident.UpdatedAt) {
			t.Fatalf("read back %s, want updatedAt %s", r.Data["incident"], p.Incident.UpdatedAt)
		}
	})
	t.Run("EveryField", func(t *testing.T) {
		in := map[string]any{
			"id": "IL-0002", "org": "Globex", "orgSlug": "globex", "date": "2024-02-29", "dateKind": "incident",
			"title":   map[string]any{"en": "Title", "ko": "제목", "extra": map[string]any{"ja": "タイトル"}},
			"summary": map[string]any{"en": "Summary"}, "lessons": map[string]any{"ko": "교훈"},
			"trigger": map[string]any{"en": "t"}, "detection": map[string]any{"en": "d"}, "symptomsText": map[string]any{"en": "s"},
			"domain": []string{"database"}, "symptoms": []string{"high-latency"}, "components": []string{"cache"},
			"contributing": []string{"single-point-of-failure"}, "rootCause": "software-bug", "severity": "sev2",
			"impact":      map[string]any{"scope": "all", "users": "everyone", "region": "eu"},
			"timeline":    map[string]any{"detectedAfter": "45m", "resolvedAfter": "3d"},
			"remediation": []any{map[string]any{"text": map[string]any{"en": "fixed"}}},
			"actionItems": []any{map[string]any{"text": map[string]any{"ko": "할 일"}, "extra": map[string]any{"owner": "sre"}}},
			"sources":     []any{map[string]any{"url": "https://example.com/post", "kind": "blog", "archived": "https://web.archive.org/x"}},
			"docs":        []any{map[string]any{"kind": "slides"}},
			"related":     []string{"IL-0001"}, "recurrenceOf": "IL-0001",
			"review": map[string]any{"writtenBy": "lee"}, "url": "https://incidentlib.example/cases/IL-0002",
			"extra": map[string]any{"x_source": "form"},
		}
		p := s.upsert(t, in)
		if len(p.UserErrors) != 0 {
			t.Fatalf("%+v", p.UserErrors)
		}
		got := s.export(t)
		line := got[strings.Index(got, `{"id":"IL-0002"`):]
		line = line[:strings.IndexByte(line, '\n')]
		var inc incidentlib.Incident
		if err := json.Unmarshal([]byte(line), &inc); err != nil {
			t.Fatal(err)
		}
		if inc.Title.Extra == nil || inc.ActionItems[0].Extra == nil || inc.Extra == nil || len(inc.Docs) != 1 ||
			inc.Timeline.ResolvedAfter != "3d" || inc.Review.WrittenBy != incidentlib.BootstrapAdmin.Name || inc.RecurrenceOf != "IL-0001" {
			t.Fatalf("stored %s", line)
		}
		s.clean(t)
	})
	t.Run("Conflict", func(t *testing.T) {
		first := s.upsert(t, wrInput("IL-0003"))
		s.upsert(t, map[string]any{"id": "IL-0003", "org": "Acme", "orgSlug": "acme", "title": map[string]any{"ko": "바뀜"}})
		before := s.export(t)
		in := wrInput("IL-0003")
		in["expectedUpdatedAt"] = first.Incident.UpdatedAt
		p := s.upsert(t, in)
		if p.Incident != nil || len(p.UserErrors) != 1 || p.UserErrors[0].Code != incidentlib.ECONFLICT ||
			!slices.Equal(p.UserErrors[0].Field, []string{"input", "expectedUpdatedAt"}) {
			t.Fatalf("%+v", p)
		}
		if s.export(t) != before {
			t.Fatal("a conflicting write changed the store")
		}
	})
}

// TestMutationUserErrors: bad input gives userErrors naming the input
// field in GraphQL's names, not top-level errors, and writes nothing.
func TestMutationUserErrors(t *testing.T) {
	s := newWriteServer(t, wrToken)
	s.upsert(t, wrInput("IL-0001"))
	cases := []struct {
		name  string
		set   map[string]any
		field []string
	}{
		{"ID", map[string]any{"id": "IL-1"}, []string{"input", "id"}},
		{"Date", map[string]any{"date": "2023-02-29"}, []string{"input", "date"}},
		{"Duration", map[string]any{"timeline": map[string]any{"detectedAfter": "a while"}}, []string{"input", "timeline", "detectedAfter"}},
		{"Term", map[string]any{"rootCause": "cache"}, []string{"input", "rootCause"}},
		{"TermInList", map[string]any{"symptoms": []string{"high-latency", "nope"}}, []string{"input", "symptoms", "1"}},
		{"RelatedSelf", map[string]any{"related": []string{"IL-0002"}}, []string{"input", "related", "0"}},
		{"RelatedMissing", map[string]any{"related": []string{"IL-0404"}}, []string{"input", "related", "0"}},
		{"RecurrenceOfSelf", map[string]any{"recurrenceOf": "IL-0002"}, []string{"input", "recurrenceOf"}},
		{"SourceURL", map[string]any{"sources": []any{map[string]any{"url": "mailto:x@example.com"}}}, []string{"input", "sources", "0", "url"}},
		{"TitleLength", map[string]any{"title": map[string]any{"en": strings.Repeat("t", incidentlib.MaxTitleLen+1)}}, []string{"input", "title", "en"}},
		{"OrgSlugOfAnotherOrg", map[string]any{"org": "Acme Holdings"}, []string{"input", "org"}},
		{"OrgUnderAnotherSlug", map[string]any{"orgSlug": "acme-inc"}, []string{"input", "orgSlug"}},
		{"ReviewedAt", map[string]any{"review": map[string]any{"reviewedAt": "2026-01-01T00:00:00Z"}}, []string{"input", "review", "reviewedAt"}},
		{"ExtraNotObject", map[string]any{"extra": []int{1}}, []string{"input", "extra"}},
		{"TextExtraNotObject", map[string]any{"title": map[string]any{"en": "t", "extra": "ja"}}, []string{"input", "title", "extra"}},
	}
	before := s.export(t)
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			in := wrInput("IL-0002")
			for k, v := range c.set {
				in[k] = v
			}
			p := s.upsert(t, in)
			if p.Incident != nil {
				t.Fatal("an incident came back")
			}
			var found bool
			for _, e := range p.UserErrors {
				if e.Code == incidentlib.EINVALID && slices.Equal(e.Field, c.field) && e.Message != "" {
					found = true
				}
			}
			if !found {
				t.Fatalf("no INVALID user error on %v: %+v", c.field, p.UserErrors)
			}
			if s.export(t) != before {
				t.Fatal("a refused write changed the store")
			}
		})
	}
}

func TestDeleteAndReviewMutations(t *testing.T) {
	s := newWriteServer(t, wrToken)
	s.upsert(t, wrInput("IL-0001"))
	in := wrInput("IL-0002")
	in["related"] = []string{"IL-0001"}
	s.upsert(t, in)

	var rev wrIncidentPayload
	s.mutate(t, `mutation { submitForReview(id: "IL-0002") { incident { id reviewState } userErrors { field code } } }`, nil, "submitForReview", &rev)
	if rev.Incident == nil || len(rev.UserErrors) > 0 {
		t.Fatalf("submit: %+v", rev)
	}
	// The reviewer is the token's name (the bootstrap admin's), who wrote
	// the incident: four eyes refuse it, and nothing is written.
	seq := s.DB.Incidents().Seq()
	s.mutate(t, `mutation { reviewIncident(id: "IL-0002", decision: APPROVE) {
		incident { id review { reviewedAt reviewedBy } } userErrors { field code } } }`, nil, "reviewIncident", &rev)
	if rev.Incident != nil || len(rev.UserErrors) != 1 || rev.UserErrors[0].Code != incidentlib.ESELFREVIEW || s.DB.Incidents().Seq() != seq {
		t.Fatalf("%+v", rev)
	}
	r := s.do(t, "", `{ incidents(filter: {reviewStates: [IN_REVIEW]}) { totalCount } }`, nil)
	if !strings.Contains(string(r.Data["incidents"]), `"totalCount":1`) {
		t.Fatalf("reviewStates filter: %s", r.Data["incidents"])
	}

	type deletePayload struct {
		DeletedID   *string       `json:"deletedId"`
		UnlinkedIDs []string      `json:"unlinkedIds"`
		UserErrors  []wrUserError `json:"userErrors"`
	}
	const del = `mutation($id: ID!) { deleteIncident(id: $id) { deletedId unlinkedIds userErrors { field code } } }`
	var d deletePayload
	s.mutate(t, del, map[string]any{"id": "IL-0001"}, "deleteIncident", &d)
	if d.DeletedID == nil || *d.DeletedID != "IL-0001" || !slices.Equal(d.UnlinkedIDs, []string{"IL-0002"}) {
		t.Fatalf("%+v", d)
	}
	r = s.do(t, "", `{ incident(id: "IL-0002") { relatedIds review { reviewedAt } } }`, nil)
	if !strings.Contains(string(r.Data["incident"]), `"relatedIds":[]`) {
		t.Fatalf("the link to the deleted incident is still there: %s", r.Data["incident"])
	}
	s.clean(t)

	for _, c := range []struct {
		name, id, code string
	}{{"NotFound", "IL-0001", incidentlib.ENOTFOUND}, {"Malformed", "x", incidentlib.EINVALID}} {
		t.Run(c.name, func(t *testing.T) {
			var d deletePayload
			s.mutate(t, del, map[string]any{"id": c.id}, "deleteIncident", &d)
			if d.DeletedID != nil || len(d.UserErrors) != 1 || d.UserErrors[0].Code != c.code || !slices.Equal(d.UserErrors[0].Field, []string{"id"}) {
				t.Fatalf("%+v", d)
			}
			var p wrIncidentPayload
			s.mutate(t, `mutation($id: ID!) { reviewIncident(id: $id, decision: APPROVE) { incident { id } userErrors { field code } } }`,
				map[string]any{"id": c.id}, "reviewIncident", &p)
			if p.Incident != nil || len(p.UserErrors) != 1 || p.UserErrors[0].Code != c.code {
				t.Fatalf("%+v", p)
			}
		})
	}
}

func TestImportIncidentsMutation(t *testing.T) {
	s := newWriteServer(t, wrToken)
	const imp = `mutation($r: [IncidentInput!]!) { importIncidents(records: $r) { created updated unchanged userErrors { field code message } } }`
	type payload struct {
		Created, Updated, Unchanged int
		UserErrors                  []wrUserError `json:"userErrors"`
	}
	records := func() []any {
		a, b, c := wrInput("IL-0001"), wrInput("IL-0002"), wrInput("IL-0003")
		b["recurrenceOf"] = "IL-0003" // links forward, inside the import
		c["related"] = []string{"IL-0001"}
		c["review"] = map[string]any{"writtenBy": "lee", "reviewedAt": "2026-01-01T00:00:00Z", "reviewedBy": "kim"}
		return []any{a, b, c}
	}
	t.Run("AllOrNothing", func(t *testing.T) {
		rs := records()
		rs[2].(map[string]any)["date"] = "2025-13-01"
		rs = append(rs, map[string]any{"id": "IL-0004", "org": "Acme", "orgSlug": "acme", "title": map[string]any{"en": "t"}, "expectedUpdatedAt": ""})
		before := s.export(t)
		var p payload
		s.mutate(t, imp, map[string]any{"r": rs}, "importIncidents", &p)
		fields := map[string]bool{}
		for _, e := range p.UserErrors {
			if e.Code != incidentlib.EINVALID {
				t.Errorf("code %s", e.Code)
			}
			fields[strings.Join(e.Field, ".")] = true
		}
		if !fields["records.3.expectedUpdatedAt"] {
			t.Fatalf("user errors %+v", p.UserErrors)
		}
		delete(rs[3].(map[string]any), "expectedUpdatedAt")
		s.mutate(t, imp, map[string]any{"r": rs}, "importIncidents", &p)
		if len(p.UserErrors) != 1 || strings.Join(p.UserErrors[0].Field, ".") != "records.2.date" || p.Created != 0 {
			t.Fatalf("%+v", p)
		}
		if s.export(t) != before {
			t.Fatal("a refused import wrote")
		}
	})
	t.Run("Written", func(t *testing.T) {
		var p payload
		s.mutate(t, imp, map[string]any{"r": records()}, "importIncidents", &p)
		if len(p.UserErrors) != 0 || p.Created != 3 {
			t.Fatalf("%+v", p)
		}
		s.mutate(t, imp, map[string]any{"r": records()}, "importIncidents", &p)
		if p.Unchanged != 3 || p.Created+p.Updated != 0 {
			t.Fatalf("importing the same records again: %+v", p)
		}
		r := s.do(t, "", `{ incident(id: "IL-0003") { review { reviewedBy } recurrences { id } } }`, nil)
		if got := string(r.Data["incident"]); !strings.Contains(got, `"reviewedBy":"kim"`) || !strings.Contains(got, "IL-0002") {
			t.Fatalf("%s", got)
		}
		s.clean(t)
	})
}

// TestBackupEndpoint: a backup taken while writers write opens, passes
// check and holds the same records as the store at some moment; refused
// without the admin token.
func TestBackupEndpoint(t *testing.T) {
	s := newWriteServer(t, wrToken)
	for i := 1; i <= 30; i++ {
		s.upsert(t, wrInput(incidentlib.FormatID(uint32(i))))
	}
	get := func(auth string) *http.Response {
		req, _ := http.NewRequest(http.MethodGet, s.URL+"/admin/backup", nil)
		if auth != "" {
			req.Header.Set("Authorization", auth)
		}
		resp, err := s.Client().Do(req)
		if err != nil {
			t.Fatal(err)
		}
		return resp
	}
	t.Run("Refused", func(t *testing.T) {
		for _, c := range []struct {
			name, auth string
			status     int
		}{{"NoHeader", "", http.StatusUnauthorized}, {"WrongToken", "Bearer nope-nope-nope-nope", http.StatusUnauthorized}} {
			resp := get(c.auth)
			io.Copy(io.Discard, resp.Body)
			resp.Body.Close()
			if resp.StatusCode != c.status || resp.Header.Get("WWW-Authenticate") == "" {
				t.Errorf("%s: status %d", c.name, resp.StatusCode)
			}
		}
		ro := newWriteServer(t, "")
		req, _ := http.NewRequest(http.MethodGet, ro.URL+"/admin/backup", nil)
		req.Header.Set("Authorization", "Bearer "+wrToken)
		resp, err := ro.Client().Do(req)
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
		// A token the server does not know is 401, on a server without
		// --admin-token too.
		if resp.StatusCode != http.StatusUnauthorized {
			t.Errorf("server without tokens: status %d", resp.StatusCode)
		}
	})
	t.Run("QuietCopyIsTheSameStore", func(t *testing.T) {
		resp := get("Bearer " + wrToken)
		body, err := io.ReadAll(resp.Body)
		resp.Body.Close()
		if err != nil || resp.StatusCode != http.StatusOK {
			t.Fatalf("status %d: %v", resp.StatusCode, err)
		}
		path := filepath.Join(t.TempDir(), "quiet.db")
		if err := os.WriteFile(path, body, 0o600); err != nil {
			t.Fatal(err)
		}
		restored, err := storage.Open(path, storage.Options{Taxonomy: seeds.MustTaxonomy(), ReadOnly: true})
		if err != nil {
			t.Fatal(err)
		}
		defer restored.Close()
		var got bytes.Buffer
		if err := restored.Maintenance().Export(context.Background(), &got); err != nil {
			t.Fatal(err)
		}
		if got.String() != s.export(t) || restored.Incidents().Seq() != s.DB.Incidents().Seq() {
			t.Fatal("the copy differs from the store")
		}
	})
	t.Run("RestoredCopyServesTheSameData", func(t *testing.T) {
		// Writers keep writing while the backup is taken.
		var wg sync.WaitGroup
		stop := make(chan struct{})
		for g := range 2 {
			wg.Go(func() {
				for i := 0; ; i++ {
					select {
					case <-stop:
						return
					default:
					}
					in := wrInput(incidentlib.FormatID(uint32(100 + g*1000 + i%50)))
					in["title"] = map[string]any{"en": fmt.Sprint("v", i)}
					body, _ := json.Marshal(map[string]any{"query": wrUpsert, "variables": map[string]any{"input": in}})
					req, _ := http.NewRequest(http.MethodPost, s.URL+"/graphql", bytes.NewReader(body))
					req.Header.Set("Content-Type", "application/json")
					req.Header.Set("Authorization", "Bearer "+wrToken)
					resp, err := s.Client().Do(req)
					if err != nil {
						t.Error(err)
						return
					}
					io.Copy(io.Discard, resp.Body)
					resp.Body.Close()
				}
			})
		}
		resp := get("Bearer " + wrToken)
		body, err := io.ReadAll(resp.Body)
		resp.Body.Close()
		close(stop)
		wg.Wait()
		if err != nil || resp.StatusCode != http.StatusOK {
			t.Fatalf("status %d: %v", resp.StatusCode, err)
		}
		if cl, _ := strconv.Atoi(resp.Header.Get("Content-Length")); cl != len(body) || cl == 0 {
			t.Fatalf("Content-Length %s, body %d bytes", resp.Header.Get("Content-Length"), len(body))
		}
		path := filepath.Join(t.TempDir(), "restored.db")
		if err := os.WriteFile(path, body, 0o600); err != nil {
			t.Fatal(err)
		}
		restored, err := storage.Open(path, storage.Options{Taxonomy: seeds.MustTaxonomy(), ReadOnly: true})
		if err != nil {
			t.Fatal(err)
		}
		defer restored.Close()
		problems, err := restored.Maintenance().Check(context.Background())
		if err != nil || len(problems) > 0 {
			t.Fatalf("check of the restored copy: %v %v", problems, err)
		}
		var got bytes.Buffer
		if err := restored.Maintenance().Export(context.Background(), &got); err != nil {
			t.Fatal(err)
		}
		// The first 30 records were there before the backup and never changed.
		want := strings.Join(strings.SplitAfter(s.export(t), "\n")[:30], "")
		if !strings.HasPrefix(got.String(), want) {
			t.Fatal("the restored copy does not hold the records written before it")
		}
		// A server over the restored copy answers like the original.
		ts, _ := testutil.ServerTest(t, restored, server.Config{}, testutil.ServerParts{})
		rs := &wrServer{Server: ts, DB: restored}
		q := `{ incidents(first: 5, orderBy: {field: ID, direction: ASC}) { totalCount nodes { id title(lang: KO) } } }`
		a, b := rs.do(t, "", q, nil), s.do(t, "", `{ incidents(first: 5, orderBy: {field: ID, direction: ASC}, filter: {ids: ["IL-0001","IL-0002","IL-0003","IL-0004","IL-0005"]}) { nodes { id title(lang: KO) } } }`, nil)
		var an, bn struct {
			Nodes []map[string]any `json:"nodes"`
		}
		json.Unmarshal(a.Data["incidents"], &an)
		json.Unmarshal(b.Data["incidents"], &bn)
		if len(an.Nodes) != 5 || fmt.Sprint(an.Nodes) != fmt.Sprint(bn.Nodes) {
			t.Fatalf("restored %v, original %v", an.Nodes, bn.Nodes)
		}
	})
}

func TestWriteMetrics(t *testing.T) {
	s := newWriteServer(t, wrToken)
	s.upsert(t, wrInput("IL-0001"))
	resp, err := s.Client().Get(s.URL + "/metrics")
	if err != nil {
		t.Fatal(err)
	}
	b, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	text := string(b)
	for _, name := range []string{"incidentlib_bbolt_write_commit_seconds_count 1", "incidentlib_store_writes_in_flight 0",
		"incidentlib_bbolt_free_pages", "incidentlib_bbolt_pending_pages", "incidentlib_bbolt_freelist_bytes", "incidentlib_bbolt_file_bytes"} {
		if !strings.Contains(text, name) {
			t.Errorf("/metrics lacks %q", name)
		}
	}
}
