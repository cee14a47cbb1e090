package admin_test

import (
	"context"
	"encoding/json"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/incidentlib/incidentlib"
	"github.com/incidentlib/incidentlib/internal/testutil"
	"github.com/incidentlib/incidentlib/seeds"
	"github.com/incidentlib/incidentlib/server"
	"github.com/incidentlib/incidentlib/server/admin"
	"github.com/incidentlib/incidentlib/storage"
)

const adminToken = "admin-token-of-the-tests"

// token makes an API token with role in db and returns its secret.
func token(tb testing.TB, db *storage.DB, name string, role incidentlib.Role) string {
	tb.Helper()
	return testutil.APIToken(tb, db, name, role)
}

// TestCheckAdminToken: no token (a read-only server) is fine; a short one
// or one with spaces or control characters is refused, at start-up too.
func TestCheckAdminToken(t *testing.T) {
	for _, tok := range []string{"", adminToken, strings.Repeat("x", admin.MinAdminTokenLen)} {
		if err := admin.CheckAdminToken(tok); err != nil {
			t.Errorf("%q refused: %v", tok, err)
		}
	}
	for _, tok := range []string{"short", strings.Repeat("x", admin.MinAdminTokenLen-1), "has a space in the middle of it", "a-tab\tin-the-middle-of-it", "a-newline-at-the-end\n"} {
		if err := admin.CheckAdminToken(tok); err == nil {
			t.Errorf("%q accepted", tok)
		}
		if _, err := admin.NewAuth(tok, nil); err == nil {
			t.Errorf("NewAuth took %q", tok)
		}
	}
}

// TestIdentify: the bootstrap token and a stored token identify their
// holders; no header is an anonymous reader; anything else in the header
// is UNAUTHENTICATED, never anonymous.
func TestIdentify(t *testing.T) {
	db := testutil.ServerStore(t, nil, storage.Options{})
	editor := token(t, db, "eddie", incidentlib.RoleEditor)
	revoked := token(t, db, "gone", incidentlib.RoleAdmin)
	if _, err := db.Tokens().RevokeToken(context.Background(), "gone"); err != nil {
		t.Fatal(err)
	}
	auth, err := admin.NewAuth(adminToken, db.Tokens())
	if err != nil {
		t.Fatal(err)
	}
	bootstrapOnly, err := admin.NewAuth(adminToken, nil)
	if err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	for _, c := range []struct {
		name   string
		auth   *admin.Auth
		header string
		id     incidentlib.Identity
		ok     bool
		code   string
	}{
		{"NoHeader", auth, "", incidentlib.Identity{}, false, ""},
		{"Bootstrap", auth, "Bearer " + adminToken, incidentlib.BootstrapAdmin, true, ""},
		{"SchemeCaseInsensitive", auth, "bearer " + adminToken, incidentlib.BootstrapAdmin, true, ""},
		{"StoredToken", auth, "Bearer " + editor, incidentlib.Identity{Name: "eddie", Role: incidentlib.RoleEditor}, true, ""},
		{"OtherScheme", auth, "Basic " + adminToken, incidentlib.Identity{}, false, incidentlib.EUNAUTHENTICATED},
		{"NoCredential", auth, "Bearer ", incidentlib.Identity{}, false, incidentlib.EUNAUTHENTICATED},
		{"Unknown", auth, "Bearer not-a-token-of-this-library", incidentlib.Identity{}, false, incidentlib.EUNAUTHENTICATED},
		{"Revoked", auth, "Bearer " + revoked, incidentlib.Identity{}, false, incidentlib.EUNAUTHENTICATED},
		{"StoredTokenWithoutStore", bootstrapOnly, "Bearer " + editor, incidentlib.Identity{}, false, incidentlib.EUNAUTHENTICATED},
	} {
		t.Run(c.name, func(t *testing.T) {
			id, ok, err := c.auth.Identify(ctx, c.header)
			if code := incidentlib.ErrorCode(err); err != nil && code != c.code || err == nil && c.code != "" {
				t.Fatalf("error %v, want code %q", err, c.code)
			}
			if ok != c.ok || id.Name != c.id.Name || id.Role != c.id.Role {
				t.Fatalf("identity %+v %v, want %+v %v", id, ok, c.id, c.ok)
			}
		})
	}
}

// TestBackupEndpointGuarded: GET /admin/backup through the real handler
// is 401 with WWW-Authenticate without a token or with a bad one, 403 for
// a role below admin, and for the admin a store file that opens with the
// store's sequence, kept by no cache.
func TestBackupEndpointGuarded(t *testing.T) {
	db := testutil.ServerStore(t, testutil.Corpus(t, 5, 3), storage.Options{})
	hs, _ := testutil.ServerTest(t, db, server.Config{AdminToken: adminToken}, testutil.ServerParts{})
	reviewer := token(t, db, "rita", incidentlib.RoleReviewer)
	get := func(auth string) *testutil.Response {
		req, _ := http.NewRequest(http.MethodGet, hs.URL+"/admin/backup", nil)
		if auth != "" {
			req.Header.Set("Authorization", auth)
		}
		return testutil.Do(t, hs, req)
	}
	for _, c := range []struct {
		name, auth string
		status     int
	}{
		{"NoHeader", "", http.StatusUnauthorized},
		{"BadToken", "Bearer nope-nope-nope-nope", http.StatusUnauthorized},
		{"Reviewer", "Bearer " + reviewer, http.StatusForbidden},
	} {
		t.Run(c.name, func(t *testing.T) {
			r := get(c.auth)
			if r.Status != c.status {
				t.Fatalf("status %d, want %d: %s", r.Status, c.status, r.Body)
			}
			if (c.status == http.StatusUnauthorized) != (r.Header.Get("WWW-Authenticate") != "") {
				t.Fatalf("status %d with WWW-Authenticate %q", r.Status, r.Header.Get("WWW-Authenticate"))
			}
		})
	}
	t.Run("Admin", func(t *testing.T) {
		seq := db.Incidents().Seq()
		r := get("Bearer " + adminToken)
		if r.Status != http.StatusOK || r.Header.Get("Cache-Control") != "no-store" || r.Header.Get("Content-Type") != "application/octet-stream" {
			t.Fatalf("status %d, headers %v", r.Status, r.Header)
		}
		path := filepath.Join(t.TempDir(), "backup.db")
		if err := os.WriteFile(path, r.Body, 0o600); err != nil {
			t.Fatal(err)
		}
		restored, err := storage.Open(path, storage.Options{Taxonomy: seeds.MustTaxonomy(), ReadOnly: true})
		if err != nil {
			t.Fatal(err)
		}
		defer restored.Close()
		if restored.Incidents().Seq() != seq {
			t.Fatalf("the backup's sequence is %d, the store's %d", restored.Incidents().Seq(), seq)
		}
	})
}

// TestReadOnlyReplica: a replica (server.Config.Primary) refuses every
// mutation with READ_ONLY naming its primary, before anything is written,
// and answers queries.
func TestReadOnlyReplica(t *testing.T) {
	const primary = "http://primary.example:8080"
	db := testutil.ServerStore(t, testutil.Corpus(t, 3, 14), storage.Options{})
	hs, _ := testutil.ServerTest(t, db, server.Config{Primary: primary, AdminToken: adminToken}, testutil.ServerParts{})
	var out struct {
		Data   map[string]json.RawMessage
		Errors []struct {
			Message    string
			Extensions map[string]any
		}
	}
	r := testutil.PostGraphQL(t, hs, map[string]any{"query": `mutation { deleteIncident(id: "IL-1000") { deletedId } }`}, "Authorization", "Bearer "+adminToken)
	if err := json.Unmarshal(r.Body, &out); err != nil {
		t.Fatalf("%d %s", r.Status, r.Body)
	}
	if r.Code() != incidentlib.EREADONLY || out.Errors[0].Extensions["primary"] != primary || !strings.Contains(out.Errors[0].Message, primary) {
		t.Fatalf("a replica answered a mutation with %s", r.Body)
	}
	if db.Incidents().Seq() != 3 {
		t.Fatalf("the store changed: sequence %d", db.Incidents().Seq())
	}
	r = testutil.PostGraphQL(t, hs, map[string]any{"query": `{ incident(id: "IL-1000") { id } }`})
	if r.Status != http.StatusOK || r.Code() != "" || !strings.Contains(string(r.Body), `"id":"IL-1000"`) {
		t.Fatalf("a replica does not answer queries: %d %s", r.Status, r.Body)
	}
}
