package storage_test

import (
	"bytes"
	"context"
	"encoding/binary"
	"encoding/json"
	"fmt"
	"strings"
	"testing"
	"time"

	bolt "go.etcd.io/bbolt"

	"github.com/incidentlib/incidentlib"
)

// hgLine is a line of export --history, its versions' members as raw JSON
// to change one at a time.
type hgLine struct {
	ID        string                       `json:"id"`
	History   []map[string]json.RawMessage `json:"history"`
	Gaps      bool                         `json:"gaps,omitempty"`
	Unordered bool                         `json:"unordered,omitempty"`
}

// hgExport writes IL-0001 (created by kim, updated by lee) and returns its
// export --history line.
func hgExport(t *testing.T) hgLine {
	t.Helper()
	src := wrOpen(t, true)
	if _, err := src.Incidents().UpsertIncident(asUser("kim", incidentlib.RoleEditor), wrIncident("IL-0001", "Acme", "acme", "one"), incidentlib.WriteOptions{}); err != nil {
		t.Fatal(err)
	}
	if _, err := src.Incidents().UpsertIncident(asUser("lee", incidentlib.RoleEditor), wrIncident("IL-0001", "Acme", "acme", "two"), incidentlib.WriteOptions{}); err != nil {
		t.Fatal(err)
	}
	var buf bytes.Buffer
	if err := src.Versions().ExportHistory(context.Background(), &buf); err != nil {
		t.Fatal(err)
	}
	var l hgLine
	if err := json.Unmarshal(buf.Bytes(), &l); err != nil || len(l.History) != 2 {
		t.Fatalf("%v: %s", err, buf.Bytes())
	}
	return l
}

func hgJSON(v any) json.RawMessage {
	b, err := json.Marshal(v)
	if err != nil {
		panic(err)
	}
	return b
}

// TestImportHistoryGrammar: a history import that breaks the history
// grammar, or whose records break the member grammar, is EINVALID naming
// the line and the version, and writes nothing; the unchanged export is
// taken.
func TestImportHistoryGrammar(t *testing.T) {
	rec := func(l *hgLine, k int) map[string]json.RawMessage {
		var m map[string]json.RawMessage
		if err := json.Unmarshal(l.History[k]["record"], &m); err != nil {
			t.Fatal(err)
		}
		return m
	}
	cases := []struct {
		name    string
		change  func(l *hgLine)
		version int
	}{
		{"LastRecordNullNotDeleted", func(l *hgLine) {
			v := map[string]json.RawMessage{"version": hgJSON(3), "at": l.History[1]["at"], "author": hgJSON("lee"), "action": hgJSON("UPDATE"), "record": hgJSON(nil)}
			l.History = append(l.History, v)
		}, 3},
		{"Gap", func(l *hgLine) {
			l.History[1]["version"] = hgJSON(3)
			m := rec(l, 1)
			m["version"] = hgJSON(3)
			l.History[1]["record"] = hgJSON(m)
		}, 3},
		{"FirstNotOne", func(l *hgLine) {
			l.History = l.History[1:]
		}, 2},
		{"TimeNotRFC3339", func(l *hgLine) { l.History[1]["at"] = hgJSON("yesterday") }, 2},
		{"TimeBackwards", func(l *hgLine) { l.History[1]["at"] = hgJSON("2000-01-01T00:00:00Z") }, 2},
		{"EmptyAuthor", func(l *hgLine) { l.History[1]["author"] = hgJSON("") }, 2},
		{"LongAuthor", func(l *hgLine) { l.History[1]["author"] = hgJSON(strings.Repeat("a", 100_000)) }, 2},
		{"ControlInAuthor", func(l *hgLine) { l.History[1]["author"] = hgJSON("lee\x1b[2J") }, 2},
		{"UnknownRole", func(l *hgLine) { l.History[1]["role"] = hgJSON("root") }, 2},
		{"UnknownAction", func(l *hgLine) { l.History[1]["action"] = hgJSON("EDIT") }, 2},
		{"RestoreOfNoVersion", func(l *hgLine) {
			l.History[1]["action"], l.History[1]["target"] = hgJSON("RESTORE"), hgJSON(99)
		}, 2},
		{"DeleteOfLive", func(l *hgLine) { l.History[1]["action"] = hgJSON("DELETE") }, 2},
		{"TombstoneWithRecord", func(l *hgLine) {
			l.History[1]["action"], l.History[1]["deleted"] = hgJSON("DELETE"), hgJSON(true)
		}, 2},
		{"ApproveWithoutAuthor", func(l *hgLine) {
			l.History[1]["action"], l.History[1]["author"] = hgJSON("APPROVE"), hgJSON("")
		}, 2},
		{"RecordOfAnotherVersion", func(l *hgLine) { l.History[1]["record"] = l.History[0]["record"] }, 2},
		{"MemberTwiceInRecord", func(l *hgLine) {
			r := string(l.History[1]["record"])
			l.History[1]["record"] = json.RawMessage(strings.Replace(r, `"review":{"written_by":"kim"`, `"review":{"written_by":"kim","written_by":"ceo"`, 1))
			if string(l.History[1]["record"]) == r {
				t.Fatalf("no review in %s", r)
			}
		}, 2},
		{"ReservedMemberInRecord", func(l *hgLine) {
			m := rec(l, 1)
			m["review"] = json.RawMessage(strings.TrimSuffix(string(m["review"]), "}") + `,"Written_By":"ceo"}`)
			l.History[1]["record"] = hgJSON(m)
		}, 2},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			l := hgExport(t)
			c.change(&l)
			line := append(hgJSON(l), '\n')
			dst := wrOpen(t, true)
			seq := dst.Incidents().Seq()
			_, err := dst.Versions().ImportHistory(context.Background(), bytes.NewReader(line))
			if incidentlib.ErrorCode(err) != incidentlib.EINVALID {
				t.Fatalf("code %q: %v\n%s", incidentlib.ErrorCode(err), err, line)
			}
			if msg := err.Error(); !strings.Contains(msg, fmt.Sprintf("version %d", c.version)) {
				t.Fatalf("the error does not name version %d: %v", c.version, err)
			}
			if dst.Incidents().Seq() != seq || wrExport(t, dst) != "" {
				t.Fatal("a refused import wrote")
			}
		})
	}
	t.Run("Unchanged", func(t *testing.T) {
		dst := wrOpen(t, true)
		if _, err := dst.Versions().ImportHistory(context.Background(), bytes.NewReader(hgJSON(hgExport(t)))); err != nil {
			t.Fatal(err)
		}
		wrClean(t, dst)
	})
}

// TestImportHistoryCompacted: a compacted history starts after version 1;
// its export says so ("gaps") and imports, and the same line without the
// mark is refused. A line whose times go back imports with its mark
// ("unordered") only.
func TestImportHistoryCompacted(t *testing.T) {
	src := wrOpen(t, true)
	for _, title := range []string{"one", "two", "three"} {
		if _, err := src.Incidents().UpsertIncident(asUser("kim", incidentlib.RoleEditor), wrIncident("IL-0001", "Acme", "acme", title), incidentlib.WriteOptions{}); err != nil {
			t.Fatal(err)
		}
	}
	if n, err := src.Maintenance().CompactHistory(context.Background(), time.Date(2100, 1, 1, 0, 0, 0, 0, time.UTC)); err != nil || n != 2 {
		t.Fatalf("compacted %d: %v", n, err)
	}
	wrClean(t, src)
	var a bytes.Buffer
	if err := src.Versions().ExportHistory(context.Background(), &a); err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(a.String(), `"gaps":true`) {
		t.Fatalf("no gaps mark: %s", a.String())
	}
	dst := wrOpen(t, true)
	if _, err := dst.Versions().ImportHistory(context.Background(), bytes.NewReader(a.Bytes())); err != nil {
		t.Fatal(err)
	}
	var b bytes.Buffer
	if err := dst.Versions().ExportHistory(context.Background(), &b); err != nil || b.String() != a.String() {
		t.Fatalf("%v:\n%s\n%s", err, a.String(), b.String())
	}
	unmarked := strings.Replace(a.String(), `,"gaps":true`, "", 1)
	if _, err := wrOpen(t, true).Versions().ImportHistory(context.Background(), strings.NewReader(unmarked)); incidentlib.ErrorCode(err) != incidentlib.EINVALID {
		t.Fatalf("an unmarked history from version 3: %v", err)
	}
	l := hgExport(t)
	l.History[1]["at"] = hgJSON("2000-01-01T00:00:00Z")
	if _, err := wrOpen(t, true).Versions().ImportHistory(context.Background(), bytes.NewReader(hgJSON(l))); incidentlib.ErrorCode(err) != incidentlib.EINVALID {
		t.Fatalf("times back without the mark: %v", err)
	}
	l.Unordered = true
	dst = wrOpen(t, true)
	if _, err := dst.Versions().ImportHistory(context.Background(), bytes.NewReader(hgJSON(l))); err != nil {
		t.Fatalf("times back with the mark: %v", err)
	}
	wrClean(t, dst) // check allows what the import allowed
}

// TestCheckHistoryGrammar: check reports a store whose history or records
// break the grammars (bytes written into the bbolt buckets, as an old or
// damaged store holds them).
func TestCheckHistoryGrammar(t *testing.T) {
	key := func(n, v uint32) []byte {
		k := make([]byte, 8)
		binary.BigEndian.PutUint32(k, n)
		binary.BigEndian.PutUint32(k[4:], v)
		return k
	}
	for _, c := range []struct {
		name string
		edit func(tx *bolt.Tx) error
		want string
	}{
		{"NewestVersionWithoutRecord", func(tx *bolt.Tx) error {
			return tx.Bucket([]byte("history")).Put(key(1, 2), []byte(`{"seq":0,"at":"2026-03-01T09:00:05Z","author":"kim","action":"UPDATE"}`))
		}, "no delete and has no record"},
		{"EmptyAuthor", func(tx *bolt.Tx) error {
			b := tx.Bucket([]byte("history"))
			v := bytes.Replace(b.Get(key(1, 1)), []byte(`"author":"kim"`), []byte(`"author":""`), 1)
			return b.Put(key(1, 1), v)
		}, "no author"},
		{"UnknownRole", func(tx *bolt.Tx) error {
			b := tx.Bucket([]byte("history"))
			v := bytes.Replace(b.Get(key(1, 1)), []byte(`"role":"editor"`), []byte(`"role":"root"`), 1)
			return b.Put(key(1, 1), v)
		}, `role "root"`},
		{"MemberTwiceInRecord", func(tx *bolt.Tx) error {
			b := tx.Bucket([]byte("incidents"))
			k := []byte{0, 0, 0, 1}
			v := bytes.Replace(b.Get(k), []byte(`"review":{"written_by":"kim"`), []byte(`"review":{"written_by":"kim","written_by":"ceo"`), 1)
			return b.Put(k, v)
		}, `member "written_by" appears twice in review`},
	} {
		t.Run(c.name, func(t *testing.T) {
			db := wrOpen(t, true)
			if _, err := db.Incidents().UpsertIncident(asUser("kim", incidentlib.RoleEditor), wrIncident("IL-0001", "Acme", "acme", "one"), incidentlib.WriteOptions{}); err != nil {
				t.Fatal(err)
			}
			wrClean(t, db)
			if err := db.Bolt().Update(c.edit); err != nil {
				t.Fatal(err)
			}
			problems, err := db.Maintenance().Check(context.Background())
			if err != nil {
				t.Fatal(err)
			}
			for _, p := range problems {
				if strings.Contains(p, "IL-0001") && strings.Contains(p, c.want) {
					return
				}
			}
			t.Fatalf("check does not report %q:\n%s", c.want, strings.Join(problems, "\n"))
		})
	}
}

// TestImportRecordsMemberGrammar: import (the store's, which import --db
// and the API use) refuses a record whose nested unknown member repeats a
// known one, naming the record and the path, and writes nothing.
func TestImportRecordsMemberGrammar(t *testing.T) {
	db := wrOpen(t, true)
	ok := wrIncident("IL-0001", "Acme", "acme", "one")
	bad := wrIncident("IL-0002", "Acme", "acme", "two")
	bad.Sources = []incidentlib.Source{{URL: "https://a.example/1"}, {URL: "https://a.example/2", Extra: incidentlib.Extra{"url": json.RawMessage(`"javascript:alert(1)"`)}}}
	_, err := db.Incidents().ImportIncidents(context.Background(), []*incidentlib.Incident{ok, bad}, incidentlib.ImportOptions{})
	found := false
	for _, e := range incidentlib.ErrorList(err) {
		if e.Code == incidentlib.EINVALID && strings.HasSuffix(strings.Join(e.Field, "."), "sources.1.url") {
			found = true
		}
	}
	if !found {
		t.Fatalf("no EINVALID on sources.1.url: %v", err)
	}
	if wrExport(t, db) != "" {
		t.Fatal("a refused import wrote")
	}
}
