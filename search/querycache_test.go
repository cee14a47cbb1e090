package search

import (
	"context"
	"reflect"
	"slices"
	"sync/atomic"
	"testing"

	"github.com/incidentlib/incidentlib"
	"github.com/incidentlib/incidentlib/glossary"
)

// swapGlossary is a glossary.Reader whose glossary a test replaces.
type swapGlossary struct {
	g atomic.Pointer[glossary.Glossary]
}

func (s *swapGlossary) Glossary(context.Context) (*glossary.Glossary, error) { return s.g.Load(), nil }

// TestCompiledQueriesKept: a query compiled once (querycache.go) gives the
// same page as compiled afresh, the next glossary compiles it anew, and an
// invalid language or query is refused whether or not the query is kept.
func TestCompiledQueriesKept(t *testing.T) {
	ctx := context.Background()
	x0, r := crossStore(t)
	full, err := r.Glossary(ctx)
	if err != nil {
		t.Fatal(err)
	}
	sw := &swapGlossary{}
	sw.g.Store(full)
	x, err := Open(ctx, x0.db, t.TempDir(), Options{Glossary: sw})
	if err != nil {
		t.Fatal(err)
	}
	defer x.Close()
	for _, q := range []string{"replication lag", `"replication lag"`, "인증서 만료", "memory leak rollout", "tls -\"certificate expiry\""} {
		first := run(t, x, q)
		if x.queries.Len() == 0 {
			t.Fatalf("%q: not kept", q)
		}
		if again := run(t, x, q); !reflect.DeepEqual(first, again) {
			t.Fatalf("%q: kept %+v, afresh %+v", q, again, first)
		}
		if fresh := run(t, x0, q); !reflect.DeepEqual(first, fresh) {
			t.Fatalf("%q: %+v, in an index without kept queries %+v", q, first, fresh)
		}
	}
	// Without "replication lag" in the glossary (a new version), the
	// Korean record is no longer found; with it back, it is.
	var less []glossary.Entry
	for _, e := range full.Entries {
		if !slices.Contains(e.En, "replication lag") {
			less = append(less, e)
		}
	}
	if len(less) == len(full.Entries) {
		t.Fatal("the glossary has no replication lag")
	}
	sw.g.Store(&glossary.Glossary{Entries: less, Version: full.Version + 1})
	if got := ids(t, x, "replication lag"); slices.Contains(got, "IL-0001") {
		t.Fatalf("the glossary's old version answered: %v", got)
	}
	sw.g.Store(&glossary.Glossary{Entries: full.Entries, Version: full.Version + 2})
	if got := ids(t, x, "replication lag"); !slices.Contains(got, "IL-0001") {
		t.Fatalf("the glossary's new version is not used: %v", got)
	}
	bad := incidentlib.Lang("fr")
	if _, err := x.Search(ctx, incidentlib.SearchQuery{Query: "replication lag", Lang: &bad}, incidentlib.PageArgs{}); incidentlib.ErrorCode(err) != incidentlib.EINVALID {
		t.Fatalf("an unknown language: %v", err)
	}
	if _, err := x.Search(ctx, incidentlib.SearchQuery{Query: `"replication`}, incidentlib.PageArgs{}); incidentlib.ErrorCode(err) != incidentlib.EBADQUERY {
		t.Fatalf("a bad query: %v", err)
	}
}
