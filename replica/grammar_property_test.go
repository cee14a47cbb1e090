package replica_test

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"math/rand/v2"
	"path/filepath"
	"strings"
	"testing"

	"github.com/incidentlib/incidentlib"
	"github.com/incidentlib/incidentlib/changefeed"
	"github.com/incidentlib/incidentlib/gen"
	"github.com/incidentlib/incidentlib/importer"
	"github.com/incidentlib/incidentlib/seeds"
)

// Names and values of the unknown members the property test puts at
// random places of records: unicode, HTML characters, line separators,
// numbers as written, nested objects and lists, and names that repeat a
// known member (which the write path refuses).
var (
	propNames    = []string{"x_note", "ja", "注記", "emoji😀", "a<b>&c", "sp ace", "", "\u2028", "history_note", "Url2"}
	propBadNames = []string{"url", "Written_By", "history", "text", "EN", "kind", "scope", "role", "seq", "deleted", "entry"}
	propVals     = []string{`"plain"`, `"<script>&amp;</script>"`, `"줄\u2028바꿈 é 😀"`, `1.50`, `-0`, `1e3`, `true`, `null`, `[]`, `{}`,
		`{"k":[1,{"z":null}],"h":"<>"}`, `[{"a":1},{"a":2}]`, `{"history":[]}`, `"\u003c\u0026"`}
	propBadVals = []string{`{"d":1,"d":2}`, `[{"a":{"b":1,"b":1}}]`}
)

// pick takes from bad once in 60 draws, else from good.
func pick(r *rand.Rand, good, bad []string) string {
	if r.IntN(60) == 0 {
		return bad[r.IntN(len(bad))]
	}
	return good[r.IntN(len(good))]
}

func propExtra(r *rand.Rand) incidentlib.Extra {
	if r.IntN(3) == 0 {
		return nil
	}
	x := incidentlib.Extra{}
	for range 1 + r.IntN(3) {
		x[pick(r, propNames, propBadNames)] = json.RawMessage(pick(r, propVals, propBadVals))
	}
	return x
}

// propRecord puts random unknown members into every object of inc that
// keeps them.
func propRecord(r *rand.Rand, inc *incidentlib.Incident) {
	inc.Extra = propExtra(r)
	for _, t := range []*incidentlib.Text{&inc.Title, &inc.Summary, &inc.Lessons} {
		t.Extra = propExtra(r)
	}
	inc.Impact.Extra, inc.Timeline.Extra, inc.Review.Extra = propExtra(r), propExtra(r), propExtra(r)
	for k := range inc.Sources {
		inc.Sources[k].Extra = propExtra(r)
	}
	for k := range inc.Remediation {
		inc.Remediation[k].Extra = propExtra(r)
		inc.Remediation[k].Text.Extra = propExtra(r)
	}
	for k := range inc.OrganizationRoles {
		inc.OrganizationRoles[k].Extra = propExtra(r)
	}
	for k := range inc.Events {
		inc.Events[k].Extra = propExtra(r)
	}
	if r.IntN(4) == 0 {
		inc.Docs = []json.RawMessage{json.RawMessage(pick(r, propVals, propBadVals))}
	}
}

// TestGrammarRoundTripProperty: random records with unknown members at
// every depth that the write path accepts export and import into a fresh
// store byte-identically (through the text reader import uses, which
// refuses a member named twice), their change feed lines name every
// member once, and a replica following the primary holds the same bytes;
// the ones it refuses are refused with EINVALID.
func TestGrammarRoundTripProperty(t *testing.T) {
	p := newPrimary(t, 3)
	editor := incidentlib.WithIdentity(context.Background(), incidentlib.Identity{Name: "kim", Role: incidentlib.RoleEditor})
	accepted, refused := 0, 0
	for seed := uint64(1); seed <= 4; seed++ {
		incs, err := gen.Generate(gen.Options{Count: 40, Seed: int64(seed), FirstID: uint32(100 * seed), Taxonomy: seeds.MustTaxonomy()})
		if err != nil {
			t.Fatal(err)
		}
		r := rand.New(rand.NewPCG(seed, 7))
		for _, inc := range incs {
			inc.Related, inc.RecurrenceOf = nil, ""
			propRecord(r, inc)
			if _, err := p.db.Incidents().UpsertIncident(editor, inc, incidentlib.WriteOptions{}); err != nil {
				if incidentlib.ErrorCode(err) != incidentlib.EINVALID {
					t.Fatalf("%s: %v", inc.ID, err)
				}
				refused++
				continue
			}
			accepted++
		}
	}
	t.Logf("accepted %d, refused %d", accepted, refused)
	if accepted < 40 || refused < 5 {
		t.Fatalf("accepted %d, refused %d: the generator does not try both", accepted, refused)
	}
	a := exportOf(t, p.db)
	recs, err := importer.ReadRecords("export.jsonl", a)
	if err != nil {
		t.Fatalf("the export does not read back: %v", err)
	}
	incs := make([]*incidentlib.Incident, len(recs))
	for k, rec := range recs {
		incs[k] = rec.Incident
	}
	// Each record's change feed line names every member once too.
	for _, inc := range incs {
		var line bytes.Buffer
		bw := bufio.NewWriter(&line)
		if err := changefeed.WriteChangeLine(bw, 1, false, inc.ID, inc); err != nil || bw.Flush() != nil {
			t.Fatal(err)
		}
		if err := incidentlib.CheckMemberNames(line.Bytes()); err != nil {
			t.Fatalf("the feed line of %s: %v", inc.ID, err)
		}
	}
	dst := openStore(t, filepath.Join(t.TempDir(), "dst.db"))
	defer dst.Close()
	if _, err := dst.Incidents().ImportIncidents(context.Background(), incs, incidentlib.ImportOptions{KeepUpdatedAt: true}); err != nil {
		t.Fatalf("the export does not import: %v", err)
	}
	if b := exportOf(t, dst); !bytes.Equal(a, b) {
		al, bl := strings.Split(string(a), "\n"), strings.Split(string(b), "\n")
		for k := range min(len(al), len(bl)) {
			if al[k] != bl[k] {
				t.Fatalf("export, import, export differs at line %d:\n%s\n%s", k+1, al[k], bl[k])
			}
		}
		t.Fatalf("export, import, export differs: %d and %d bytes", len(a), len(b))
	}
	if problems, err := dst.Maintenance().Check(context.Background()); err != nil || len(problems) > 0 {
		t.Fatal(err, problems)
	}
	rdb := openStore(t, filepath.Join(t.TempDir(), "replica.db"))
	defer rdb.Close()
	ts := newCountingServer(t, p.srv)
	f := startFollower(t, rdb, ts.URL, nil)
	f.waitSeq(t, p.db.Incidents().Seq())
	f.stop()
	sameLibrary(t, p.db, rdb)
}
