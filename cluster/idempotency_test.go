package cluster_test

import (
	"context"
	"testing"

	"github.com/incidentlib/incidentlib"
	"github.com/incidentlib/incidentlib/cluster"
)

// An idempotency key is bound to the write it first came with: the same
// key with the same write answers the first result on every node; the
// same key with another write (another record, author, target or
// operation, another import) is refused with CONFLICT on every node and
// writes nothing, so that no client believes written what was dropped.
func TestIdempotencyKeyBoundToContent(t *testing.T) {
	c := startCluster(t, 3)
	bg := context.Background()
	incs := incidents(t, 4, 11)
	inc, other := incs[0], incs[1]
	request := func(author, key string) context.Context {
		return cluster.WithIdempotencyKey(editor(author), key)
	}
	first, err := c.members[0].mb.Writer.UpsertIncident(request("a", "k-1"), inc, incidentlib.WriteOptions{})
	if err != nil {
		t.Fatal(err)
	}
	edited := *inc
	edited.Title.En = "a second text sent with the first write's key"
	imp := incidents(t, 2, 12)
	for i, rec := range imp {
		rec.ID = incidentlib.FormatID(uint32(900 + i))
	}
	if _, err := c.members[0].mb.Writer.ImportIncidents(request("a", "imp-1"), imp[:1], incidentlib.ImportOptions{}); err != nil {
		t.Fatal(err)
	}
	last, err := c.members[0].mb.Node.LastSeq(bg)
	if err != nil {
		t.Fatal(err)
	}
	c.level(last)

	for i, m := range c.members {
		w := m.mb.Writer
		t.Run(m.name+"/SameWrite", func(t *testing.T) {
			got, err := w.UpsertIncident(request("a", "k-1"), inc, incidentlib.WriteOptions{})
			if err != nil || got.UpdatedAt != first.UpdatedAt {
				t.Fatalf("the retry answered %v %v, want the first answer %s", got, err, first.UpdatedAt)
			}
		})
		refused := map[string]func() error{
			"OtherRecord": func() error {
				_, err := w.UpsertIncident(request("a", "k-1"), &edited, incidentlib.WriteOptions{})
				return err
			},
			"OtherAuthor": func() error {
				_, err := w.UpsertIncident(request("b", "k-1"), inc, incidentlib.WriteOptions{})
				return err
			},
			"OtherTarget": func() error {
				_, err := w.UpsertIncident(request("a", "k-1"), other, incidentlib.WriteOptions{})
				return err
			},
			"OtherOp": func() error {
				_, err := w.DeleteIncident(request("a", "k-1"), inc.ID, incidentlib.WriteOptions{})
				return err
			},
			"OtherImport": func() error {
				_, err := w.ImportIncidents(request("a", "imp-1"), imp[1:], incidentlib.ImportOptions{})
				return err
			},
			"OtherCondition": func() error {
				v := 1
				_, err := w.UpsertIncident(request("a", "k-1"), inc, incidentlib.WriteOptions{ExpectedVersion: &v})
				return err
			},
		}
		for name, write := range refused {
			t.Run(m.name+"/"+name, func(t *testing.T) {
				if err := write(); incidentlib.ErrorCode(err) != incidentlib.ECONFLICT {
					t.Fatalf("node %d: the reused key answered %v, want CONFLICT", i, err)
				}
			})
		}
	}
	if got, err := c.members[2].mb.Node.LastSeq(bg); err != nil || got != last {
		t.Fatalf("the stream's last sequence is %d (%v), want %d: a write with a reused key was published", got, err, last)
	}
	for _, m := range c.members {
		got, err := m.db.Incidents().FindIncidentsByIDs(bg, []string{inc.ID, other.ID, imp[1].ID})
		if err != nil || len(got) != 3 || got[0] == nil || got[0].Title.En != inc.Title.En || got[1] != nil || got[2] != nil {
			t.Errorf("%s holds %v %v: a write with a reused key was applied", m.name, got, err)
		}
	}

	// The writes of one request (one key) are each their own write; the
	// request sent again writes none of them again.
	two := incs[2:]
	for round := range 2 {
		ctx := request("a", "multi-1")
		for _, rec := range two {
			if _, err := c.members[round].mb.Writer.UpsertIncident(ctx, rec, incidentlib.WriteOptions{}); err != nil {
				t.Fatalf("round %d, %s: %v", round, rec.ID, err)
			}
		}
		if round == 0 {
			if last, err = c.members[0].mb.Node.LastSeq(bg); err != nil {
				t.Fatal(err)
			}
		}
	}
	if got, err := c.members[2].mb.Node.LastSeq(bg); err != nil || got != last {
		t.Fatalf("the stream's last sequence is %d (%v), want %d: a retried request wrote again", got, err, last)
	}
	c.level(last)
	c.same()
}
