package storage_test

import (
	"bytes"
	"context"
	"fmt"
	"math/rand/v2"
	"testing"
	"time"

	"github.com/incidentlib/incidentlib"
	"github.com/incidentlib/incidentlib/storage"
)

// logWrite is one write of a log, as a cluster node's applier makes it.
type logWrite struct {
	what string
	run  func(ctx context.Context, w storage.Writer) error
}

// logWrites makes n writes of a log on a few incidents: upserts with and
// without expected versions (stale ones among them), records refused
// before the store's transaction, deletes of missing incidents, the
// review workflow, withdrawals and restores, so that many are refused at
// apply and many expect the same version.
func logWrites(t *testing.T, n int, seed uint64) []logWrite {
	t.Helper()
	incs := corpus(t, 6, int64(seed))
	for _, inc := range incs {
		inc.Related, inc.RecurrenceOf = nil, ""
		inc.Review.ReviewedAt, inc.Review.ReviewedBy = "", ""
	}
	r := rand.New(rand.NewPCG(seed, 1))
	var out []logWrite
	for i := range n {
		inc := incs[r.IntN(len(incs))]
		opts := incidentlib.WriteOptions{}
		if r.IntN(2) == 0 {
			v := r.IntN(4)
			opts.ExpectedVersion = &v
		}
		switch k := r.IntN(10); {
		case k < 4:
			c := *inc
			c.Title.En = fmt.Sprintf("write %d", i)
			out = append(out, logWrite{fmt.Sprintf("upsert %s %v", c.ID, opts.ExpectedVersion), func(ctx context.Context, w storage.Writer) error {
				_, err := w.UpsertIncident(ctx, &c, opts)
				return err
			}})
		case k == 4:
			c := *inc
			c.ID = "not-an-id"
			out = append(out, logWrite{"upsert of a bad record", func(ctx context.Context, w storage.Writer) error {
				_, err := w.UpsertIncident(ctx, &c, opts)
				return err
			}})
		case k == 5:
			out = append(out, logWrite{"delete " + inc.ID, func(ctx context.Context, w storage.Writer) error {
				_, err := w.DeleteIncident(ctx, inc.ID, opts)
				return err
			}})
		case k == 6:
			out = append(out, logWrite{"submit " + inc.ID, func(ctx context.Context, w storage.Writer) error {
				_, err := w.SubmitForReview(ctx, inc.ID, opts)
				return err
			}})
		case k == 7:
			out = append(out, logWrite{"approve " + inc.ID, func(ctx context.Context, w storage.Writer) error {
				ctx = incidentlib.WithIdentity(ctx, incidentlib.Identity{Name: "reviewer", Role: incidentlib.RoleReviewer})
				_, err := w.DecideReview(ctx, inc.ID, incidentlib.DecisionApprove, "fine", opts)
				return err
			}})
		case k == 8:
			out = append(out, logWrite{"withdraw " + inc.ID, func(ctx context.Context, w storage.Writer) error {
				_, err := w.WithdrawIncident(ctx, inc.ID, "a reason", opts)
				return err
			}})
		default:
			v := 1 + r.IntN(3)
			out = append(out, logWrite{fmt.Sprintf("restore %s %d", inc.ID, v), func(ctx context.Context, w storage.Writer) error {
				_, err := w.RestoreIncident(ctx, inc.ID, v, "back", opts)
				return err
			}})
		}
	}
	return out
}

func logCtx(seq uint64) context.Context {
	ctx := incidentlib.WithIdentity(context.Background(), incidentlib.Identity{Name: "writer", Role: incidentlib.RoleEditor})
	at := time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC).Add(time.Duration(seq) * time.Millisecond)
	return incidentlib.WithLogPosition(ctx, incidentlib.LogPosition{Seq: seq, At: at})
}

func loggedDB(t *testing.T) *storage.DB {
	t.Helper()
	db := MustOpenDB(t)
	if err := db.ClusterLog().MarkLogged(context.Background()); err != nil {
		t.Fatal(err)
	}
	return db
}

// A log applied in groups (one transaction for many writes) gives the
// store, the history, the refusals and each write's answer that the same
// log applied one write per transaction gives.
func TestLogGroupSameAsAlone(t *testing.T) {
	ctx := context.Background()
	writes := logWrites(t, 400, 7)
	alone, grouped := loggedDB(t), loggedDB(t)
	codes := make([]string, len(writes))
	for i, w := range writes {
		seq := uint64(i + 1)
		err := w.run(logCtx(seq), alone.Writer())
		if incidentlib.IsInternal(incidentlib.ErrorCode(err)) {
			t.Fatalf("write %d (%s) alone: %v", seq, w.what, err)
		}
		codes[i] = incidentlib.ErrorCode(err)
		if at, _, _ := alone.ClusterLog().LogSeq(ctx); at < seq {
			if err := alone.ClusterLog().SkipLogged(ctx, seq, err); err != nil {
				t.Fatal(err)
			}
		}
	}
	r := rand.New(rand.NewPCG(8, 1))
	groups, refused := 0, 0
	for i := 0; i < len(writes); {
		n := min(1+r.IntN(40), len(writes)-i)
		err := grouped.ClusterLog().ApplyLogGroup(ctx, func(gctx context.Context, g incidentlib.LogGroup) error {
			for j := i; j < i+n; j++ {
				seq := uint64(j + 1)
				err := writes[j].run(incidentlib.WithLogPosition(incidentlib.WithIdentity(gctx, incidentlib.Identity{Name: "writer", Role: incidentlib.RoleEditor}),
					incidentlib.LogPosition{Seq: seq, At: time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC).Add(time.Duration(seq) * time.Millisecond)}), grouped.Writer())
				if g.Broken() != nil {
					return fmt.Errorf("write %d (%s) broke the group: %w", seq, writes[j].what, g.Broken())
				}
				if got := incidentlib.ErrorCode(err); got != codes[j] {
					t.Errorf("write %d (%s): %q in a group, %q alone (%v)", seq, writes[j].what, got, codes[j], err)
				}
				if err != nil {
					refused++
				}
				if g.Seq() < seq {
					if err := g.Skip(seq, err); err != nil {
						return err
					}
				}
			}
			return nil
		})
		if err != nil {
			t.Fatal(err)
		}
		groups++
		i += n
	}
	if refused < len(writes)/10 || refused > len(writes)*9/10 {
		t.Fatalf("%d of %d writes refused: the log does not mix refusals with writes", refused, len(writes))
	}
	for _, db := range []*storage.DB{alone, grouped} {
		if seq, _, _ := db.ClusterLog().LogSeq(ctx); seq != uint64(len(writes)) {
			t.Fatalf("log position %d, want %d", seq, len(writes))
		}
		if problems, err := db.Maintenance().Check(ctx); err != nil || len(problems) > 0 {
			t.Fatalf("check: %v %v", problems, err)
		}
	}
	if !bytes.Equal(export(t, alone), export(t, grouped)) {
		t.Error("the exports differ")
	}
	var ha, hg bytes.Buffer
	if err := alone.Versions().ExportHistory(ctx, &ha); err != nil {
		t.Fatal(err)
	}
	if err := grouped.Versions().ExportHistory(ctx, &hg); err != nil {
		t.Fatal(err)
	}
	if !bytes.Equal(ha.Bytes(), hg.Bytes()) {
		t.Error("the histories differ")
	}
	ra, _ := alone.ClusterLog().Rejections(ctx)
	rg, _ := grouped.ClusterLog().Rejections(ctx)
	if fmt.Sprint(ra) != fmt.Sprint(rg) || len(ra) != refused {
		t.Errorf("refusals: %d alone, %d in groups, %d answered", len(ra), len(rg), refused)
	}
	if alone.Incidents().Seq() != grouped.Incidents().Seq() {
		t.Errorf("change sequences %d alone, %d in groups", alone.Incidents().Seq(), grouped.Incidents().Seq())
	}
	t.Logf("%d writes, %d refused, %d groups", len(writes), refused, groups)
}

// A write that cannot join a group (an import) breaks it: nothing of the
// group is written, the position stays; a write under a group that has
// ended fails rather than waiting.
func TestLogGroupBroken(t *testing.T) {
	ctx := context.Background()
	db := loggedDB(t)
	incs := corpus(t, 2, 3)
	for _, inc := range incs {
		inc.Related, inc.RecurrenceOf = nil, ""
		inc.Review.ReviewedAt, inc.Review.ReviewedBy = "", ""
	}
	var ended context.Context
	err := db.ClusterLog().ApplyLogGroup(ctx, func(gctx context.Context, g incidentlib.LogGroup) error {
		ended = gctx
		if _, err := db.Writer().UpsertIncident(incidentlib.WithLogPosition(gctx, incidentlib.LogPosition{Seq: 1, At: time.Now()}), incs[0], incidentlib.WriteOptions{}); err != nil {
			return err
		}
		if g.Seq() != 1 || g.Broken() != nil {
			t.Fatalf("after the upsert: position %d, broken %v", g.Seq(), g.Broken())
		}
		_, err := db.Writer().ImportIncidents(incidentlib.WithLogPosition(gctx, incidentlib.LogPosition{Seq: 2, At: time.Now()}), incs[1:], incidentlib.ImportOptions{})
		if err == nil || g.Broken() == nil {
			t.Fatalf("an import joined a group: %v, broken %v", err, g.Broken())
		}
		return nil // the group's own error is returned
	})
	if err == nil {
		t.Fatal("a broken group committed")
	}
	if seq, _, _ := db.ClusterLog().LogSeq(ctx); seq != 0 {
		t.Fatalf("position %d after a broken group", seq)
	}
	if got, _ := db.Incidents().FindIncidentsByIDs(ctx, []string{incs[0].ID}); got[0] != nil {
		t.Fatal("a write of a broken group was committed")
	}
	_, err = db.Writer().UpsertIncident(incidentlib.WithLogPosition(ended, incidentlib.LogPosition{Seq: 1, At: time.Now()}), incs[0], incidentlib.WriteOptions{})
	if err == nil {
		t.Fatal("a write under an ended group was taken")
	}
}
