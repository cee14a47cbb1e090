package server_test

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/incidentlib/incidentlib"
	"github.com/incidentlib/incidentlib/internal/testutil"
	"github.com/incidentlib/incidentlib/seeds"
	"github.com/incidentlib/incidentlib/server"
	"github.com/incidentlib/incidentlib/server/gqledge"
	"github.com/incidentlib/incidentlib/storage"
)

// apiToken makes an API token in db and returns its secret.
func apiToken(tb testing.TB, db *storage.DB, name string, role incidentlib.Role) string {
	tb.Helper()
	return testutil.APIToken(tb, db, name, role)
}

// idServer is the real handler over a real store, without --admin-token
// (stored tokens enable writes), counting resolver calls.
type idServer struct {
	*testutil.CountingServer
	db *storage.DB
}

func newIDServer(tb testing.TB, cfg server.Config) *idServer {
	tb.Helper()
	hs := testutil.NewCountingServer(tb, nil, cfg)
	return &idServer{CountingServer: hs, db: hs.DB}
}

// send posts one operation with auth ("" for none).
func (s *idServer) send(tb testing.TB, auth, query string, vars map[string]any) *testutil.Reply {
	tb.Helper()
	if auth == "" {
		return s.Post(tb, query, vars)
	}
	return s.Post(tb, query, vars, "Authorization", auth)
}

// state is everything a refused request must leave as it was: the
// store's sequence, its records and its tokens.
func (s *idServer) state(tb testing.TB) string {
	tb.Helper()
	var buf bytes.Buffer
	if err := s.db.Maintenance().Export(context.Background(), &buf); err != nil {
		tb.Fatal(err)
	}
	toks, err := s.db.Tokens().ListTokens(context.Background())
	if err != nil {
		tb.Fatal(err)
	}
	for _, t := range toks {
		buf.WriteString(t.Name + t.Role.String() + t.Revoked.String() + "\n")
	}
	return buf.String()
}

func (s *idServer) put(tb testing.TB, ids ...string) {
	tb.Helper()
	for _, id := range ids {
		inc := &incidentlib.Incident{ID: id, Org: "Acme", OrgSlug: "acme", Title: incidentlib.Text{En: "t " + id}}
		if _, err := s.db.Incidents().UpsertIncident(context.Background(), inc, incidentlib.WriteOptions{}); err != nil {
			tb.Fatal(err)
		}
		// In review, so that a reviewer's decision is allowed.
		if _, err := s.db.Incidents().SubmitForReview(context.Background(), id, incidentlib.WriteOptions{}); err != nil {
			tb.Fatal(err)
		}
	}
}

// TestRolesOnEachMutation: each role is allowed or refused on each
// operation as the role table says; a refusal (401 without a token, 403
// with one whose role is not enough) runs no resolver, reads nothing from
// the store and writes nothing.
func TestRolesOnEachMutation(t *testing.T) {
	s := newIDServer(t, server.Config{ResponseCacheBytes: -1})
	secrets := map[incidentlib.Role]string{
		incidentlib.RoleEditor:   apiToken(t, s.db, "ed", incidentlib.RoleEditor),
		incidentlib.RoleReviewer: apiToken(t, s.db, "rev", incidentlib.RoleReviewer),
		incidentlib.RoleAdmin:    apiToken(t, s.db, "adm", incidentlib.RoleAdmin),
	}
	roles := []incidentlib.Role{incidentlib.RoleReader, incidentlib.RoleEditor, incidentlib.RoleReviewer, incidentlib.RoleAdmin}
	n := 0
	next := func() string { n++; return fmt.Sprintf("IL-%04d", 100+n) }
	ops := []struct {
		name  string
		need  incidentlib.Role
		query func(t *testing.T) (string, map[string]any)
	}{
		{"upsertIncident", incidentlib.RoleEditor, func(t *testing.T) (string, map[string]any) {
			return `mutation($i: IncidentInput!) { upsertIncident(input: $i) { userErrors { code } } }`,
				map[string]any{"i": map[string]any{"id": next(), "org": "Acme", "orgSlug": "acme", "title": map[string]any{"en": "x"}}}
		}},
		{"deleteIncident", incidentlib.RoleEditor, func(t *testing.T) (string, map[string]any) {
			id := next()
			s.put(t, id)
			return `mutation($id: ID!) { deleteIncident(id: $id) { userErrors { code } } }`, map[string]any{"id": id}
		}},
		{"importIncidents", incidentlib.RoleEditor, func(t *testing.T) (string, map[string]any) {
			return `mutation($r: [IncidentInput!]!) { importIncidents(records: $r) { userErrors { code } } }`,
				map[string]any{"r": []any{map[string]any{"id": next(), "org": "Acme", "orgSlug": "acme", "title": map[string]any{"en": "x"}}}}
		}},
		{"reviewIncident", incidentlib.RoleReviewer, func(t *testing.T) (string, map[string]any) {
			id := next()
			s.put(t, id)
			return `mutation($id: ID!) { reviewIncident(id: $id, decision: APPROVE) { userErrors { code } } }`, map[string]any{"id": id}
		}},
		{"restoreIncident", incidentlib.RoleEditor, func(t *testing.T) (string, map[string]any) {
			id := next()
			s.put(t, id) // versions 1 (create) and 2 (submit)
			return `mutation($id: ID!) { restoreIncident(id: $id, version: 1, expectedVersion: 2) { incident { version } userErrors { code } } }`, map[string]any{"id": id}
		}},
		{"submitForReview", incidentlib.RoleEditor, func(t *testing.T) (string, map[string]any) {
			id := next()
			if _, err := s.db.Incidents().UpsertIncident(context.Background(), &incidentlib.Incident{ID: id, Org: "Acme", OrgSlug: "acme", Title: incidentlib.Text{En: "t"}}, incidentlib.WriteOptions{}); err != nil {
				t.Fatal(err)
			}
			return `mutation($id: ID!) { submitForReview(id: $id, expectedVersion: 1) { incident { reviewState } userErrors { code } } }`, map[string]any{"id": id}
		}},
		{"withdrawIncident", incidentlib.RoleEditor, func(t *testing.T) (string, map[string]any) {
			id := next()
			s.put(t, id)
			return `mutation($id: ID!) { withdrawIncident(id: $id, reason: "a duplicate") { incident { reviewState withdrawnReason } userErrors { code } } }`, map[string]any{"id": id}
		}},
		{"purgeVersion", incidentlib.RoleAdmin, func(t *testing.T) (string, map[string]any) {
			id := next()
			s.put(t, id)
			// A version 3 with other content: the live content is never purged.
			if _, err := s.db.Incidents().UpsertIncident(context.Background(), &incidentlib.Incident{ID: id, Org: "Acme", OrgSlug: "acme", Title: incidentlib.Text{En: "edited " + id}}, incidentlib.WriteOptions{}); err != nil {
				t.Fatal(err)
			}
			return `mutation($id: ID!) { purgeVersion(id: $id, version: 1, reason: "takedown") { entry { action } userErrors { code } } }`, map[string]any{"id": id}
		}},
		{"history", incidentlib.RoleEditor, func(t *testing.T) (string, map[string]any) {
			return `{ incidents(first: 2) { nodes { id history(first: 5) { totalCount nodes { version author { name } } } } } }`, nil
		}},
		{"incidentVersion", incidentlib.RoleEditor, func(t *testing.T) (string, map[string]any) {
			return `{ incidentVersion(id: "IL-0001", version: 1) { version record } }`, nil
		}},
		{"deletedIncident", incidentlib.RoleEditor, func(t *testing.T) (string, map[string]any) {
			return `{ deletedIncident(id: "IL-0001") { version } }`, nil
		}},
		{"createToken", incidentlib.RoleAdmin, func(t *testing.T) (string, map[string]any) {
			return `mutation($n: String!) { createToken(name: $n, role: EDITOR) { token userErrors { code } } }`, map[string]any{"n": "new" + next()}
		}},
		{"revokeToken", incidentlib.RoleAdmin, func(t *testing.T) (string, map[string]any) {
			name := "victim" + next()
			apiToken(t, s.db, name, incidentlib.RoleEditor)
			return `mutation($n: String!) { revokeToken(name: $n) { userErrors { code } } }`, map[string]any{"n": name}
		}},
		{"tokens", incidentlib.RoleAdmin, func(t *testing.T) (string, map[string]any) {
			return `{ tokens { name } }`, nil
		}},
		{"incident", incidentlib.RoleReader, func(t *testing.T) (string, map[string]any) {
			return `{ incidents(first: 1) { totalCount } }`, nil
		}},
	}
	for _, op := range ops {
		for _, role := range roles {
			t.Run(op.name+"/"+role.String(), func(t *testing.T) {
				q, vars := op.query(t)
				auth := ""
				if role != incidentlib.RoleReader {
					auth = "Bearer " + secrets[role]
				}
				before, seq, w := s.state(t), s.db.Incidents().Seq(), s.Work()
				r := s.send(t, auth, q, vars)
				if role.Allows(op.need) {
					if r.Status != http.StatusOK || len(r.Errors) > 0 || strings.Contains(string(r.Raw), `"code"`) {
						t.Fatalf("allowed: status %d %s", r.Status, r.Raw)
					}
					return
				}
				wantStatus, wantCode := http.StatusForbidden, incidentlib.EFORBIDDEN
				if role == incidentlib.RoleReader {
					wantStatus, wantCode = http.StatusUnauthorized, incidentlib.EUNAUTHENTICATED
					if r.Header.Get("WWW-Authenticate") == "" {
						t.Error("a 401 without WWW-Authenticate")
					}
				}
				if r.Status != wantStatus || r.Code() != wantCode {
					t.Fatalf("refused: status %d, want %d %s: %s", r.Status, wantStatus, wantCode, r.Raw)
				}
				if got := s.Work(); got != w {
					t.Fatalf("a refused request ran resolvers or read the store: %+v, then %+v", w, got)
				}
				if s.db.Incidents().Seq() != seq || s.state(t) != before {
					t.Fatal("a refused request changed the store")
				}
			})
		}
	}
}

// TestBadTokensAre401: a token that is unknown, revoked or expired is
// refused with 401 and WWW-Authenticate on every route, reads included:
// never answered as an anonymous reader.
func TestBadTokensAre401(t *testing.T) {
	s := newIDServer(t, server.Config{ResponseCacheBytes: -1})
	s.put(t, "IL-0001")
	admin := apiToken(t, s.db, "boss", incidentlib.RoleAdmin)
	editor := apiToken(t, s.db, "alice", incidentlib.RoleEditor)
	const read = `{ incident(id: "IL-0001") { id } }`
	if r := s.send(t, "Bearer "+editor, read, nil); r.Status != http.StatusOK || len(r.Errors) > 0 {
		t.Fatalf("a valid token's read: %d %s", r.Status, r.Raw)
	}
	refused := func(t *testing.T, auth string) {
		t.Helper()
		w := s.Work()
		r := s.send(t, auth, read, nil)
		if r.Status != http.StatusUnauthorized || r.Code() != incidentlib.EUNAUTHENTICATED || !strings.HasPrefix(r.Header.Get("WWW-Authenticate"), "Bearer") {
			t.Fatalf("GraphQL: status %d, WWW-Authenticate %q: %s", r.Status, r.Header.Get("WWW-Authenticate"), r.Raw)
		}
		if s.Work() != w {
			t.Fatal("a refused request read the store")
		}
		for _, path := range []string{"/api/v1/incidents/IL-0001", "/api/v1/changes", "/admin/backup", "/mcp"} {
			req, _ := http.NewRequest(http.MethodGet, s.URL+path, nil)
			req.Header.Set("Authorization", auth)
			resp, err := s.Client().Do(req)
			if err != nil {
				t.Fatal(err)
			}
			resp.Body.Close()
			if resp.StatusCode != http.StatusUnauthorized || resp.Header.Get("WWW-Authenticate") == "" {
				t.Fatalf("%s: status %d", path, resp.StatusCode)
			}
		}
	}
	t.Run("Unknown", func(t *testing.T) { refused(t, "Bearer il_"+strings.Repeat("A", 43)) })
	t.Run("NotBearer", func(t *testing.T) { refused(t, "Basic "+editor) })
	t.Run("RevokedOnItsNextRequest", func(t *testing.T) {
		r := s.send(t, "Bearer "+admin, `mutation { revokeToken(name: "alice") { info { revokedAt active } userErrors { code } } }`, nil)
		if r.Status != http.StatusOK || !strings.Contains(string(r.Raw), `"active":false`) {
			t.Fatalf("revoke: %d %s", r.Status, r.Raw)
		}
		refused(t, "Bearer "+editor)
	})
	t.Run("Expired", func(t *testing.T) {
		secret, _, err := s.db.Tokens().CreateToken(context.Background(), "shortlived", incidentlib.RoleEditor, time.Now().Add(time.Hour))
		if err != nil {
			t.Fatal(err)
		}
		if r := s.send(t, "Bearer "+secret, read, nil); r.Status != http.StatusOK {
			t.Fatalf("before it expires: %d %s", r.Status, r.Raw)
		}
		now := s.db.Now
		s.db.Now = func() time.Time { return now().Add(2 * time.Hour) }
		defer func() { s.db.Now = now }()
		refused(t, "Bearer "+secret)
	})
	t.Run("ValidTokenReadsREST", func(t *testing.T) {
		req, _ := http.NewRequest(http.MethodGet, s.URL+"/api/v1/incidents/IL-0001", nil)
		req.Header.Set("Authorization", "Bearer "+admin)
		resp, err := s.Client().Do(req)
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
		if resp.StatusCode != http.StatusOK {
			t.Fatalf("status %d", resp.StatusCode)
		}
	})
}

// TestAuthorIsTheToken: the author a write stores is the token's name,
// whatever the input says.
func TestAuthorIsTheToken(t *testing.T) {
	s := newIDServer(t, server.Config{})
	editor := apiToken(t, s.db, "alice", incidentlib.RoleEditor)
	reviewer := apiToken(t, s.db, "rita", incidentlib.RoleReviewer)
	stored := func(t *testing.T, id string) incidentlib.Review {
		t.Helper()
		incs, err := s.db.Incidents().FindIncidentsByIDs(context.Background(), []string{id})
		if err != nil || len(incs) != 1 || incs[0] == nil {
			t.Fatal(id, err)
		}
		return incs[0].Review
	}
	r := s.send(t, "Bearer "+editor, `mutation($i: IncidentInput!) { upsertIncident(input: $i) { userErrors { code } } }`,
		map[string]any{"i": map[string]any{"id": "IL-0001", "org": "Acme", "orgSlug": "acme", "title": map[string]any{"en": "x"},
			"review": map[string]any{"writtenBy": "mallory"}}})
	if len(r.Errors) > 0 || strings.Contains(string(r.Raw), `"code"`) {
		t.Fatal(string(r.Raw))
	}
	if got := stored(t, "IL-0001").WrittenBy; got != "alice" {
		t.Fatalf("upsert: written_by %q, want alice", got)
	}
	r = s.send(t, "Bearer "+editor, `mutation { submitForReview(id: "IL-0001") { userErrors { code } } }`, nil)
	if strings.Contains(string(r.Raw), `"code"`) {
		t.Fatalf("submit: %s", r.Raw)
	}
	r = s.send(t, "Bearer "+reviewer, `mutation { reviewIncident(id: "IL-0001", decision: APPROVE) { incident { review { reviewedBy } } userErrors { code } } }`, nil)
	if !strings.Contains(string(r.Raw), `"reviewedBy":"rita"`) || stored(t, "IL-0001").ReviewedBy != "rita" {
		t.Fatalf("review: %s", r.Raw)
	}
	const imp = `mutation($r: [IncidentInput!]!) { importIncidents(records: $r) { created userErrors { field code } } }`
	r = s.send(t, "Bearer "+editor, imp, map[string]any{"r": []any{map[string]any{"id": "IL-0002", "org": "Acme", "orgSlug": "acme",
		"title": map[string]any{"en": "x"}, "review": map[string]any{"writtenBy": "mallory"}}}})
	if !strings.Contains(string(r.Raw), `"created":1`) || stored(t, "IL-0002").WrittenBy != "alice" {
		t.Fatalf("import: %s, written_by %q", r.Raw, stored(t, "IL-0002").WrittenBy)
	}
	t.Run("EditorImportCannotCarryAReview", func(t *testing.T) {
		seq := s.db.Incidents().Seq()
		r := s.send(t, "Bearer "+editor, imp, map[string]any{"r": []any{map[string]any{"id": "IL-0003", "org": "Acme", "orgSlug": "acme",
			"title": map[string]any{"en": "x"}, "review": map[string]any{"reviewedBy": "mallory", "reviewedAt": "2024-01-01T00:00:00Z"}}}})
		if !strings.Contains(string(r.Raw), `"field":["records","0","review"],"code":"INVALID"`) || s.db.Incidents().Seq() != seq {
			t.Fatalf("%s", r.Raw)
		}
	})
	t.Run("EditorImportIsADraft", func(t *testing.T) {
		r := s.send(t, "Bearer "+editor, imp, map[string]any{"r": []any{map[string]any{"id": "IL-0003", "org": "Acme", "orgSlug": "acme",
			"title": map[string]any{"en": "x"}}}})
		if !strings.Contains(string(r.Raw), `"created":1`) {
			t.Fatalf("%s", r.Raw)
		}
		if got := stored(t, "IL-0003"); got.ReviewedBy != "" || got.ReviewedAt != "" || got.WrittenBy != "alice" {
			t.Fatalf("stored review %+v", got)
		}
		r = s.send(t, "", `{ incident(id: "IL-0003") { version reviewState } }`, nil)
		if !strings.Contains(string(r.Raw), `"version":1,"reviewState":"DRAFT"`) {
			t.Fatalf("%s", r.Raw)
		}
	})
}

// TestTokenMutations: a new token is shown once, with Cache-Control:
// no-store, and works at once; the token list never shows a secret; token
// writes leave the store's change sequence alone.
func TestTokenMutations(t *testing.T) {
	s := newIDServer(t, server.Config{AdminToken: wrToken})
	seq := s.db.Incidents().Seq()
	r := s.send(t, "Bearer "+wrToken, `mutation { createToken(name: "kim", role: REVIEWER, expiresAt: "2999-01-01") {
		token info { name role expiresAt active } userErrors { code } } }`, nil)
	var p struct {
		CreateToken struct {
			Token *string
			Info  struct {
				Name, Role, ExpiresAt string
				Active                bool
			}
		} `json:"createToken"`
	}
	if err := json.Unmarshal(r.Data, &p); err != nil || p.CreateToken.Token == nil {
		t.Fatalf("%v %s", err, r.Raw)
	}
	secret := *p.CreateToken.Token
	if !strings.HasPrefix(secret, incidentlib.TokenPrefix) || len(secret) != len(incidentlib.TokenPrefix)+43 || p.CreateToken.Info.Role != "REVIEWER" ||
		p.CreateToken.Info.ExpiresAt != "2999-01-01T00:00:00Z" || !p.CreateToken.Info.Active {
		t.Fatalf("%s", r.Raw)
	}
	if cc := r.Header.Get("Cache-Control"); cc != "no-store" {
		t.Fatalf("Cache-Control %q", cc)
	}
	if s.db.Incidents().Seq() != seq {
		t.Fatal("a token write advanced the change sequence")
	}
	if r := s.send(t, "Bearer "+secret, `mutation { reviewIncident(id: "IL-0404", decision: APPROVE) { userErrors { code } } }`, nil); r.Status != http.StatusOK ||
		!strings.Contains(string(r.Raw), `"NOT_FOUND"`) {
		t.Fatalf("the new token: %d %s", r.Status, r.Raw)
	}
	for _, c := range []struct{ name, q, code string }{
		{"Duplicate", `mutation { createToken(name: "kim", role: EDITOR) { userErrors { code } } }`, "CONFLICT"},
		{"Reserved", `mutation { createToken(name: "admin", role: EDITOR) { userErrors { code } } }`, "INVALID"},
		{"Past", `mutation { createToken(name: "old", role: EDITOR, expiresAt: "2001-01-01") { userErrors { code } } }`, "INVALID"},
		{"RevokeUnknown", `mutation { revokeToken(name: "nobody") { userErrors { code } } }`, "NOT_FOUND"},
	} {
		t.Run(c.name, func(t *testing.T) {
			r := s.send(t, "Bearer "+wrToken, c.q, nil)
			if !strings.Contains(string(r.Raw), `"code":"`+c.code+`"`) {
				t.Fatalf("%s", r.Raw)
			}
		})
	}
	t.Run("ListNeverShowsASecret", func(t *testing.T) {
		r := s.send(t, "Bearer "+wrToken, `{ tokens { name role createdAt expiresAt lastUsedAt revokedAt active } }`, nil)
		if r.Status != http.StatusOK || !strings.Contains(string(r.Raw), `"name":"kim"`) || !strings.Contains(string(r.Raw), `"lastUsedAt":"`) {
			t.Fatalf("%d %s", r.Status, r.Raw)
		}
		if strings.Contains(string(r.Raw), secret) || strings.Contains(string(r.Raw), incidentlib.TokenPrefix) {
			t.Fatalf("the list shows a secret: %s", r.Raw)
		}
		if r.Header.Get("Cache-Control") != "no-store" {
			t.Fatalf("Cache-Control %q", r.Header.Get("Cache-Control"))
		}
	})
	t.Run("LastUsedSurvivesReopen", func(t *testing.T) {
		// Written at close at the latest (a minute otherwise); reads never
		// write on the request path. The store reopened shows it.
		path := s.db.Path()
		if err := s.db.Close(); err != nil {
			t.Fatal(err)
		}
		db, err := storage.Open(path, storage.Options{Taxonomy: seeds.MustTaxonomy(), ReadOnly: true})
		if err != nil {
			t.Fatal(err)
		}
		defer db.Close()
		toks, err := db.Tokens().ListTokens(context.Background())
		if err != nil || len(toks) != 1 || toks[0].LastUsed.IsZero() {
			t.Fatalf("%+v %v", toks, err)
		}
	})
}

// TestRateLimitCannotBeEscapedWithMadeUpTokens: once an address has used
// its cost, made-up tokens are refused (401) without running anything,
// and never answered from a fresh bucket; a verified token is its own
// client.
func TestRateLimitCannotBeEscapedWithMadeUpTokens(t *testing.T) {
	s := newIDServer(t, server.Config{
		ResponseCacheBytes: -1,
		Limits:             gqledge.Limits{MaxCost: 3},
		RateLimit:          gqledge.RateLimit{CostPerSecond: 0.001},
	})
	editor := apiToken(t, s.db, "alice", incidentlib.RoleEditor)
	for i := 0; i < 3; i++ { // { __typename } costs 1
		if r := s.send(t, "", `{ __typename }`, nil); r.Status != http.StatusOK {
			t.Fatalf("request %d: %d %s", i, r.Status, r.Raw)
		}
	}
	if r := s.send(t, "", `{ __typename }`, nil); r.Status != http.StatusTooManyRequests {
		t.Fatalf("the address's bucket is empty: %d %s", r.Status, r.Raw)
	}
	w := s.Work()
	for i := 0; i < 20; i++ {
		r := s.send(t, "Bearer il_madeup"+strings.Repeat("x", i), `{ __typename }`, nil)
		if r.Status != http.StatusUnauthorized {
			t.Fatalf("made-up token %d: %d %s", i, r.Status, r.Raw)
		}
	}
	if s.Work() != w {
		t.Fatal("a made-up token ran something")
	}
	if r := s.send(t, "Bearer "+editor, `{ __typename }`, nil); r.Status != http.StatusOK {
		t.Fatalf("a verified token is its own client: %d %s", r.Status, r.Raw)
	}
}

// TestBackupNeedsAnAdminToken: GET /admin/backup takes a stored admin
// token (no --admin-token needed) and refuses an editor's with 403.
func TestBackupNeedsAnAdminToken(t *testing.T) {
	s := newIDServer(t, server.Config{})
	for _, c := range []struct {
		role   incidentlib.Role
		status int
	}{{incidentlib.RoleEditor, http.StatusForbidden}, {incidentlib.RoleReviewer, http.StatusForbidden}, {incidentlib.RoleAdmin, http.StatusOK}} {
		t.Run(c.role.String(), func(t *testing.T) {
			req, _ := http.NewRequest(http.MethodGet, s.URL+"/admin/backup", nil)
			req.Header.Set("Authorization", "Bearer "+apiToken(t, s.db, "backup-"+c.role.String(), c.role))
			resp, err := s.Client().Do(req)
			if err != nil {
				t.Fatal(err)
			}
			resp.Body.Close()
			if resp.StatusCode != c.status {
				t.Fatalf("status %d, want %d", resp.StatusCode, c.status)
			}
		})
	}
}
