package storage_test

import (
	"bytes"
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	bolt "go.etcd.io/bbolt"

	"github.com/incidentlib/incidentlib"
	"github.com/incidentlib/incidentlib/seeds"
	"github.com/incidentlib/incidentlib/storage"
)

// txID is the file's last committed transaction: a write advances it.
func txID(tb testing.TB, db *storage.DB) int {
	tb.Helper()
	var id int
	if err := db.Bolt().View(func(tx *bolt.Tx) error { id = tx.ID(); return nil }); err != nil {
		tb.Fatal(err)
	}
	return id
}

func TestTokens(t *testing.T) {
	ctx := context.Background()
	db := MustOpenDB(t)
	secret, info, err := db.Tokens().CreateToken(ctx, "alice", incidentlib.RoleReviewer, time.Time{})
	if err != nil {
		t.Fatal(err)
	}
	if !strings.HasPrefix(secret, incidentlib.TokenPrefix) || info.Name != "alice" || info.Role != incidentlib.RoleReviewer || info.Created.IsZero() {
		t.Fatalf("%q %+v", secret, info)
	}
	if db.Incidents().Seq() != 0 {
		t.Fatal("a token write advanced the change sequence")
	}
	t.Run("OnlyTheHashIsStored", func(t *testing.T) {
		b, err := os.ReadFile(db.Path())
		if err != nil {
			t.Fatal(err)
		}
		if bytes.Contains(b, []byte(secret)) || bytes.Contains(b, []byte(secret[len(incidentlib.TokenPrefix):])) {
			t.Fatal("the file holds the token")
		}
	})
	t.Run("Authenticate", func(t *testing.T) {
		before := txID(t, db)
		id, err := db.Tokens().Authenticate(ctx, secret)
		if err != nil || id != (incidentlib.Identity{Name: "alice", Role: incidentlib.RoleReviewer}) {
			t.Fatalf("%+v %v", id, err)
		}
		if txID(t, db) != before {
			t.Fatal("authenticating wrote to the file")
		}
		for _, bad := range []string{"", "il_", secret + "x", secret[:len(secret)-1], strings.TrimPrefix(secret, incidentlib.TokenPrefix)} {
			if _, err := db.Tokens().Authenticate(ctx, bad); incidentlib.ErrorCode(err) != incidentlib.EUNAUTHENTICATED {
				t.Errorf("%q: %v", bad, err)
			}
		}
		toks, _ := db.Tokens().ListTokens(ctx)
		if len(toks) != 1 || toks[0].LastUsed.IsZero() {
			t.Fatalf("last use is not kept in memory: %+v", toks)
		}
	})
	t.Run("Errors", func(t *testing.T) {
		for name, c := range map[string]struct {
			name    string
			role    incidentlib.Role
			expires time.Time
			code    string
		}{
			"Duplicate":    {"alice", incidentlib.RoleEditor, time.Time{}, incidentlib.ECONFLICT},
			"Reserved":     {"Admin", incidentlib.RoleEditor, time.Time{}, incidentlib.EINVALID},
			"BadName":      {"a b", incidentlib.RoleEditor, time.Time{}, incidentlib.EINVALID},
			"Empty":        {"", incidentlib.RoleEditor, time.Time{}, incidentlib.EINVALID},
			"ReaderRole":   {"bob", incidentlib.RoleReader, time.Time{}, incidentlib.EINVALID},
			"PastExpiry":   {"bob", incidentlib.RoleEditor, time.Now().Add(-time.Hour), incidentlib.EINVALID},
			"UnknownRoles": {"bob", incidentlib.Role(9), time.Time{}, incidentlib.EINVALID},
		} {
			t.Run(name, func(t *testing.T) {
				if _, _, err := db.Tokens().CreateToken(ctx, c.name, c.role, c.expires); incidentlib.ErrorCode(err) != c.code {
					t.Fatalf("%v, want %s", err, c.code)
				}
			})
		}
		if _, err := db.Tokens().RevokeToken(ctx, "nobody"); incidentlib.ErrorCode(err) != incidentlib.ENOTFOUND {
			t.Fatal(err)
		}
	})
	t.Run("Expired", func(t *testing.T) {
		s, _, err := db.Tokens().CreateToken(ctx, "brief", incidentlib.RoleEditor, time.Now().Add(time.Hour))
		if err != nil {
			t.Fatal(err)
		}
		if _, err := db.Tokens().Authenticate(ctx, s); err != nil {
			t.Fatal(err)
		}
		now := db.Now
		db.Now = func() time.Time { return now().Add(2 * time.Hour) }
		defer func() { db.Now = now }()
		if _, err := db.Tokens().Authenticate(ctx, s); incidentlib.ErrorCode(err) != incidentlib.EUNAUTHENTICATED {
			t.Fatalf("an expired token: %v", err)
		}
		// Its name is free again.
		if _, _, err := db.Tokens().CreateToken(ctx, "brief", incidentlib.RoleEditor, time.Time{}); err != nil {
			t.Fatal(err)
		}
	})
	t.Run("RevokeAndReopen", func(t *testing.T) {
		if _, err := db.Tokens().RevokeToken(ctx, "alice"); err != nil {
			t.Fatal(err)
		}
		if _, err := db.Tokens().Authenticate(ctx, secret); incidentlib.ErrorCode(err) != incidentlib.EUNAUTHENTICATED {
			t.Fatalf("a revoked token: %v", err)
		}
		if _, err := db.Tokens().RevokeToken(ctx, "alice"); incidentlib.ErrorCode(err) != incidentlib.ECONFLICT {
			t.Fatal(err)
		}
		path := db.Path()
		if err := db.Close(); err != nil {
			t.Fatal(err)
		}
		ro, err := storage.Open(path, storage.Options{Taxonomy: seeds.MustTaxonomy(), ReadOnly: true})
		if err != nil {
			t.Fatal(err)
		}
		defer ro.Close()
		toks, err := ro.Tokens().ListTokens(ctx)
		if err != nil || len(toks) != 2 || toks[0].Name != "alice" || toks[0].Revoked.IsZero() || toks[0].LastUsed.IsZero() {
			t.Fatalf("after reopening (the last use saved at close): %+v %v", toks, err)
		}
		if _, err := ro.Tokens().Authenticate(ctx, secret); incidentlib.ErrorCode(err) != incidentlib.EUNAUTHENTICATED {
			t.Fatal("the revocation did not survive a reopen")
		}
		if problems, err := ro.Maintenance().Check(ctx); err != nil || len(problems) > 0 {
			t.Fatalf("check: %v %v", problems, err)
		}
	})
}

// TestStoreWithoutTokensBucket: a store written before tokens opens read
// only (no tokens) and gets the bucket at its first writable open.
func TestStoreWithoutTokensBucket(t *testing.T) {
	path := filepath.Join(t.TempDir(), "old.db")
	db, err := storage.Open(path, storage.Options{Taxonomy: seeds.MustTaxonomy()})
	if err != nil {
		t.Fatal(err)
	}
	db.Close()
	b, err := bolt.Open(path, 0o600, nil)
	if err != nil {
		t.Fatal(err)
	}
	if err := b.Update(func(tx *bolt.Tx) error { return tx.DeleteBucket([]byte("tokens")) }); err != nil {
		t.Fatal(err)
	}
	b.Close()
	ro, err := storage.Open(path, storage.Options{Taxonomy: seeds.MustTaxonomy(), ReadOnly: true})
	if err != nil {
		t.Fatal(err)
	}
	if toks, err := ro.Tokens().ListTokens(context.Background()); err != nil || len(toks) != 0 {
		t.Fatalf("%v %v", toks, err)
	}
	ro.Close()
	rw, err := storage.Open(path, storage.Options{Taxonomy: seeds.MustTaxonomy()})
	if err != nil {
		t.Fatal(err)
	}
	defer rw.Close()
	if _, _, err := rw.Tokens().CreateToken(context.Background(), "kim", incidentlib.RoleEditor, time.Time{}); err != nil {
		t.Fatal(err)
	}
}
