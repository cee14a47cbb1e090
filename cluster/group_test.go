package cluster_test

import (
	"context"
	"encoding/json"
	"fmt"
	"strconv"
	"sync"
	"testing"
	"time"

	"github.com/nats-io/nats.go"

	"github.com/incidentlib/incidentlib"
	"github.com/incidentlib/incidentlib/cluster"
)

// applyBatches returns the count and sum of the member's histogram of
// messages per apply transaction.
func applyBatches(t *testing.T, m *member) (transactions, messages uint64) {
	t.Helper()
	mfs, err := m.reg.Gather()
	if err != nil {
		t.Fatal(err)
	}
	for _, mf := range mfs {
		if mf.GetName() == "incidentlib_cluster_apply_batch_messages" {
			h := mf.GetMetric()[0].GetHistogram()
			return h.GetSampleCount(), uint64(h.GetSampleSum())
		}
	}
	t.Fatalf("%s has no incidentlib_cluster_apply_batch_messages", m.name)
	return 0, 0
}

// rawWrite publishes w through member m's node as a receiving node would,
// without its checks: the store judges it at apply.
func rawWrite(t *testing.T, m *member, key string, w *cluster.Write) uint64 {
	t.Helper()
	w.At, w.Author, w.Role = time.Now().UTC().Truncate(time.Microsecond), "raw", "editor"
	data, err := json.Marshal(w)
	if err != nil {
		t.Error(err)
		return 0
	}
	hdr := nats.Header{cluster.HeaderFormat: {strconv.Itoa(cluster.FormatVersion)}, cluster.HeaderRules: {"1"}}
	seq, _, err := m.mb.Node.Publish(context.Background(), cluster.IncidentSubject(w.ID), key, nil, hdr, data)
	if err != nil {
		t.Errorf("publish %s: %v", key, err)
	}
	return seq
}

// Many concurrent writers through three nodes, with writes that expect
// the same version of one incident (through the writer, decided by the
// stream; published as they are, decided at apply) and writes the store
// refuses at apply mixed in, while one node is down: every node ends
// with the same store and refusals, each expected version has exactly
// one winner, every acknowledged write is there, and the node that comes
// back applies what it missed in groups (more messages than
// transactions: nothing here depends on timing).
func TestGroupCommitManyWriters(t *testing.T) {
	c := startCluster(t, 3)
	n1, n3 := c.members[0], c.members[2]
	shared := incidents(t, 4, 40)
	version := map[string]int{}
	for _, inc := range shared {
		got, err := n1.mb.Writer.UpsertIncident(editor("seed"), inc, incidentlib.WriteOptions{})
		if err != nil {
			t.Fatal(err)
		}
		version[inc.ID] = got.CurrentVersion()
	}
	fresh := cluster.StandaloneIncidents(t, 40, 41, 500)
	c.level(n1.mb.Applier.Applied())
	c.stop(n3) // comes back to a backlog

	const racers = 6
	var wg sync.WaitGroup
	start := make(chan struct{})
	freshErr := make([]error, len(fresh))
	for i, inc := range fresh {
		wg.Go(func() {
			<-start
			m := c.members[i%2]
			_, freshErr[i] = m.mb.Writer.UpsertIncident(editor(m.name), inc, incidentlib.WriteOptions{})
		})
	}
	// race runs racers writers of inc once start closes, each with a copy
	// of its own title expecting the version inc was at.
	race := func(inc *incidentlib.Incident, title string, write func(r int, edit *incidentlib.Incident, v *int)) {
		for r := range racers {
			wg.Go(func() {
				<-start
				edit := *inc
				edit.Title.En = fmt.Sprintf("%s %d", title, r)
				v := version[inc.ID]
				write(r, &edit, &v)
			})
		}
	}
	// Through the writer: the stream takes one publish per expected
	// version of the subject.
	winners := make([][]string, 2)
	var mu sync.Mutex
	for k := range 2 {
		race(shared[k], "racer", func(r int, edit *incidentlib.Incident, v *int) {
			_, err := c.members[r%2].mb.Writer.UpsertIncident(editor("racer"), edit, incidentlib.WriteOptions{ExpectedVersion: v})
			switch {
			case err == nil:
				mu.Lock()
				winners[k] = append(winners[k], edit.Title.En)
				mu.Unlock()
			case incidentlib.ErrorCode(err) != incidentlib.ECONFLICT:
				t.Errorf("racer %d on %s: %v", r, edit.ID, err)
			}
		})
	}
	// Published as they are: the store decides at apply, the first in the
	// log wins, in whatever group it falls.
	rawSeqs := make([][]uint64, 2)
	for k := range 2 {
		rawSeqs[k] = make([]uint64, racers)
		race(shared[2+k], "raw racer", func(r int, edit *incidentlib.Incident, v *int) {
			rawSeqs[k][r] = rawWrite(t, c.members[r%2], fmt.Sprintf("raw-%s-%d", edit.ID, r), &cluster.Write{Op: cluster.OpUpsert, ID: edit.ID, Record: edit, ExpectedVersion: v})
		})
	}
	// Refused at apply: a bad record, a delete of a missing incident.
	badSeqs := make([]uint64, 8)
	for i := range badSeqs {
		wg.Go(func() {
			<-start
			if i%2 == 0 {
				bad := *fresh[0]
				bad.ID = "IL-0990"
				bad.Review.ReviewedBy = "someone" // set by a review only
				badSeqs[i] = rawWrite(t, c.members[i%2], fmt.Sprintf("bad-%d", i), &cluster.Write{Op: cluster.OpUpsert, ID: bad.ID, Record: &bad})
			} else {
				badSeqs[i] = rawWrite(t, c.members[i%2], fmt.Sprintf("missing-%d", i), &cluster.Write{Op: cluster.OpDelete, ID: "IL-0991"})
			}
		})
	}
	close(start)
	wg.Wait()
	if t.Failed() {
		t.FailNow()
	}

	last, err := n1.mb.Node.LastSeq(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	c.level(last)
	c.start(n3)
	c.waitReady(n3)
	c.level(last)
	c.same()

	for i, err := range freshErr {
		if err != nil {
			t.Errorf("upsert of %s: %v", fresh[i].ID, err)
		}
	}
	rejected := map[uint64]string{}
	rej, err := n1.db.ClusterLog().Rejections(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	for _, r := range rej {
		rejected[r.Seq] = r.Code
	}
	for k := range 2 {
		if len(winners[k]) != 1 {
			t.Errorf("%s: %d writers won one expected version: %v", shared[k].ID, len(winners[k]), winners[k])
		}
		won := 0
		for _, seq := range rawSeqs[k] {
			switch code, ok := rejected[seq]; {
			case !ok:
				won++
			case code != incidentlib.ECONFLICT:
				t.Errorf("raw write %d on %s refused with %s, want CONFLICT", seq, shared[2+k].ID, code)
			}
		}
		if won != 1 {
			t.Errorf("%s: %d writes of one expected version applied", shared[2+k].ID, won)
		}
	}
	for i, seq := range badSeqs {
		want := incidentlib.EINVALID
		if i%2 == 1 {
			want = incidentlib.ENOTFOUND
		}
		if rejected[seq] != want {
			t.Errorf("bad write %d (seq %d) recorded as %q, want %s", i, seq, rejected[seq], want)
		}
	}
	// Every acknowledged write is on every node.
	for _, m := range c.members {
		ids := []string{shared[0].ID, shared[1].ID}
		for _, inc := range fresh {
			ids = append(ids, inc.ID)
		}
		got, err := m.db.Incidents().FindIncidentsByIDs(context.Background(), ids)
		if err != nil {
			t.Fatal(err)
		}
		for k := range 2 {
			if len(winners[k]) == 1 && (got[k] == nil || got[k].Title.En != winners[k][0]) {
				t.Errorf("%s: %s is not the acknowledged winner %q", m.name, shared[k].ID, winners[k][0])
			}
		}
		for i, inc := range fresh {
			if got[2+i] == nil || got[2+i].Title.En != inc.Title.En {
				t.Errorf("%s lacks the acknowledged write of %s", m.name, inc.ID)
			}
		}
	}
	for _, m := range c.members {
		txs, msgs := applyBatches(t, m)
		t.Logf("%s: %d messages in %d apply transactions", m.name, msgs, txs)
	}
	// The node that came back applied its backlog in groups.
	if txs, msgs := applyBatches(t, n3); msgs < uint64(len(fresh)) || txs >= msgs {
		t.Errorf("%s applied %d messages in %d transactions: no group commit", n3.name, msgs, txs)
	}
}
