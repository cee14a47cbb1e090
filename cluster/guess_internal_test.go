package cluster

import (
	"context"
	"fmt"
	"path/filepath"
	"testing"
	"time"

	"github.com/incidentlib/incidentlib"
	"github.com/incidentlib/incidentlib/gen"
	"github.com/incidentlib/incidentlib/seeds"
	"github.com/incidentlib/incidentlib/storage"
)

// TestGuessFromApplied checks what a write guesses as its incident's last
// sequence without a request (writer.go): once the applier applied a
// batch, lastSeqOf names each subject's last applied sequence, a write
// the store refused included (the stream holds it all the same, and a
// publish must expect it), and nothing for a subject it never applied
// (the writer then asks its server's copy).
func TestGuessFromApplied(t *testing.T) {
	ctx := context.Background()
	db, err := storage.Open(filepath.Join(t.TempDir(), "a.db"), storage.Options{Taxonomy: seeds.MustTaxonomy()})
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	if err := db.Writer().SkipLogged(ctx, 0, nil); err != nil { // a cluster node's store, as Attach makes it
		t.Fatal(err)
	}
	a, err := NewApplier(ctx, db.Writer(), nil, nil)
	if err != nil {
		t.Fatal(err)
	}
	incs := StandaloneIncidents(t, 2, 3, 700)
	at := time.Now().UTC().Truncate(time.Microsecond)
	stale := "2001-01-01T00:00:00Z"
	writes := []*Write{
		{Op: OpUpsert, ID: incs[0].ID, Record: incs[0], At: at},
		{Op: OpUpsert, ID: incs[1].ID, Record: incs[1], At: at},
		{Op: OpUpsert, ID: incs[0].ID, Record: incs[0], At: at.Add(time.Second)},
		{Op: OpDelete, ID: incs[1].ID, ExpectedUpdatedAt: &stale, At: at.Add(time.Second)}, // refused at apply
	}
	var msgs []Message
	for i, w := range writes {
		data, err := w.encode()
		if err != nil {
			t.Fatal(err)
		}
		msgs = append(msgs, Message{Seq: uint64(i + 1), Subject: IncidentSubject(w.ID), MsgID: fmt.Sprint("key-", i+1), Header: header(w.Op), Data: data})
	}
	if err := a.ApplyBatch(ctx, msgs); err != nil {
		t.Fatal(err)
	}
	for i := range 3 {
		if res, _ := a.resultOf(fmt.Sprint("key-", i+1)); res.Err != nil {
			t.Fatalf("write %d: %v", i+1, res.Err)
		}
	}
	if res, _ := a.resultOf("key-4"); incidentlib.ErrorCode(res.Err) != incidentlib.ECONFLICT {
		t.Fatalf("the delete with a stale condition gave %v, want a CONFLICT refused at apply", res.Err)
	}
	for subject, want := range map[string]uint64{IncidentSubject(incs[0].ID): 3, IncidentSubject(incs[1].ID): 4} {
		if got, ok := a.lastSeqOf(subject); !ok || got != want {
			t.Errorf("lastSeqOf(%s) = %d, %v; want %d", subject, got, ok, want)
		}
	}
	if got, ok := a.lastSeqOf(IncidentSubject("IL-9999")); ok {
		t.Errorf("lastSeqOf of a subject never applied = %d, want none", got)
	}
}

// StandaloneIncidents generates count incidents from first on without
// links or reviews, so that each upsert stands alone (the external tests
// use it too).
func StandaloneIncidents(tb testing.TB, count int, seed int64, first uint32) []*incidentlib.Incident {
	tb.Helper()
	incs, err := gen.Generate(gen.Options{Count: count, Seed: seed, FirstID: first, Taxonomy: seeds.MustTaxonomy()})
	if err != nil {
		tb.Fatal(err)
	}
	for _, inc := range incs {
		inc.Related, inc.RecurrenceOf = nil, ""
		inc.Review.ReviewedAt, inc.Review.ReviewedBy = "", ""
	}
	return incs
}
