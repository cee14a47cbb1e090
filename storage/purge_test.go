package storage_test

import (
	"bufio"
	"bytes"
	"compress/flate"
	"context"
	"io"
	"os"
	"path/filepath"
	"reflect"
	"slices"
	"strings"
	"testing"

	bolt "go.etcd.io/bbolt"

	"github.com/incidentlib/incidentlib"
	"github.com/incidentlib/incidentlib/changefeed"
	"github.com/incidentlib/incidentlib/seeds"
	"github.com/incidentlib/incidentlib/storage"
)

// purgeMarker is the text a takedown removes: it is in no other record.
const purgeMarker = "QZX-TAKEDOWN-4417-libel"

// MustContainNoMarker fails when the file at path holds marker anywhere:
// in its raw bytes (live pages and free pages alike) or inside a stored
// value once decompressed (bucketVersions keeps superseded records
// DEFLATEd, 'z' first, where the raw bytes would not show it).
func mustHoldNoMarker(tb testing.TB, what, path, marker string) {
	tb.Helper()
	raw, err := os.ReadFile(path)
	if err != nil {
		tb.Fatal(err)
	}
	if bytes.Contains(raw, []byte(marker)) {
		tb.Fatalf("%s: the purged text is in the bytes of %s", what, path)
	}
	db, err := bolt.Open(path, 0o600, &bolt.Options{ReadOnly: true})
	if err != nil {
		tb.Fatal(err)
	}
	defer db.Close()
	var found []string
	var walk func(b *bolt.Bucket, name string)
	walk = func(b *bolt.Bucket, name string) {
		_ = b.ForEach(func(k, v []byte) error {
			if v == nil {
				walk(b.Bucket(k), name+"/"+string(k))
				return nil
			}
			if len(v) > 1 && v[0] == 'z' {
				if d, err := io.ReadAll(flate.NewReader(bytes.NewReader(v[1:]))); err == nil && bytes.Contains(d, []byte(marker)) {
					found = append(found, name)
				}
			}
			return nil
		})
	}
	_ = db.View(func(tx *bolt.Tx) error {
		return tx.ForEach(func(name []byte, b *bolt.Bucket) error { walk(b, string(name)); return nil })
	})
	if len(found) > 0 {
		tb.Fatalf("%s: the purged text is compressed in %v of %s", what, found, path)
	}
}

// purgeStore opens a store at a path of its own, with IL-0001 at v1 (the
// marker in its title), v2 SUBMIT, v3 REQUEST_CHANGES and, when edit, v4
// without the marker; IL-0002 is another incident that stays.
func purgeStore(t *testing.T, edit bool) (*storage.DB, string) {
	t.Helper()
	path := filepath.Join(t.TempDir(), "purge.db")
	db, err := storage.Open(path, storage.Options{NoSync: true, Taxonomy: seeds.MustTaxonomy()})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { db.Close() })
	kim, lee := asUser("kim", incidentlib.RoleEditor), asUser("lee", incidentlib.RoleReviewer)
	in := wrIncident("IL-0001", "Acme", "acme", "outage "+purgeMarker)
	// A record over several pages: the pages its versions leave free are
	// not all reused by the writes after it, so the file keeps the text in
	// free pages until it is compacted.
	in.Summary.En = strings.Repeat(purgeMarker+" said ", 600)
	in.Lessons.En = in.Summary.En
	if _, err := db.Incidents().UpsertIncident(kim, in, incidentlib.WriteOptions{}); err != nil {
		t.Fatal(err)
	}
	if _, err := db.Incidents().UpsertIncident(kim, wrIncident("IL-0002", "Acme", "acme", "another outage"), incidentlib.WriteOptions{}); err != nil {
		t.Fatal(err)
	}
	if _, err := db.Incidents().SubmitForReview(kim, "IL-0001", incidentlib.WriteOptions{}); err != nil {
		t.Fatal(err)
	}
	if _, err := db.Incidents().DecideReview(lee, "IL-0001", incidentlib.DecisionRequestChanges, "cite sources", incidentlib.WriteOptions{}); err != nil {
		t.Fatal(err)
	}
	if edit {
		if _, err := db.Incidents().UpsertIncident(kim, wrIncident("IL-0001", "Acme", "acme", "outage (text removed)"), incidentlib.WriteOptions{ExpectedVersion: wrPtr(3)}); err != nil {
			t.Fatal(err)
		}
	}
	return db, path
}

// mustNotServe fails when any read of the store shows the marker: the
// history, each version, the history feed, the change log, the history
// export.
func mustNotServe(t *testing.T, db *storage.DB) {
	t.Helper()
	ctx := context.Background()
	has := func(b []byte) bool { return bytes.Contains(b, []byte(purgeMarker)) }
	for _, v := range hsHistory(t, db, "IL-0001") {
		if has(v.Record) {
			t.Fatalf("history: version %d (%s) still holds the purged text", v.Version, v.Action)
		}
		one, err := db.Versions().IncidentVersion(ctx, "IL-0001", v.Version)
		if err != nil || has(one.Record) {
			t.Fatalf("incidentVersion %d still holds the purged text (%v)", v.Version, err)
		}
	}
	feed, err := db.Versions().VersionsSince(ctx, 0, 1000)
	if err != nil {
		t.Fatal(err)
	}
	for _, c := range feed {
		if has(c.Record) {
			t.Fatalf("history feed: seq %d (%s version %d) holds the purged text", c.Seq, c.ID, c.Version)
		}
	}
	changes, err := db.Incidents().RawChangesSince(ctx, 0, 1000)
	if err != nil {
		t.Fatal(err)
	}
	for _, c := range changes {
		if has(c.Record) {
			t.Fatalf("change log: seq %d holds the purged text", c.Seq)
		}
	}
	var exp bytes.Buffer
	if err := db.Versions().ExportHistory(ctx, &exp); err != nil {
		t.Fatal(err)
	}
	if has(exp.Bytes()) {
		t.Fatal("export --history holds the purged text")
	}
	if _, del, err := db.Versions().DeletedIncident(ctx, "IL-0001"); err != nil {
		t.Fatal(err)
	} else if del != nil && has(del.Record) {
		t.Fatal("deletedIncident holds the purged text")
	}
}

// TestPurgeRemovesTheContentEverywhere: purging v1 removes its text from
// v1 and from the SUBMIT and REQUEST_CHANGES versions that carried it
// unchanged, from every read, the history feed and the export; a backup
// is a copy without the file's free pages; and after compact no byte of
// the file holds it.
func TestPurgeRemovesTheContentEverywhere(t *testing.T) {
	ctx := asUser("root", incidentlib.RoleAdmin)
	db, path := purgeStore(t, true)
	e, err := db.Incidents().PurgeVersion(ctx, "IL-0001", 1, "takedown request")
	if err != nil {
		t.Fatal(err)
	}
	if e.Action != incidentlib.ActionPurge || e.Version != 5 || e.Target != 1 || !slices.Equal(e.Purged, []int{1, 2, 3}) {
		t.Fatalf("the PURGE entry: %+v", e)
	}
	mustNotServe(t, db)
	for v, want := range map[int]bool{1: false, 2: false, 3: false, 4: true, 5: true} {
		got, _ := db.Versions().IncidentVersion(ctx, "IL-0001", v)
		if (got.Record != nil) != want {
			t.Fatalf("version %d has a record: %v, want %v", v, got.Record != nil, want)
		}
	}
	if _, err := db.Incidents().RestoreIncident(ctx, "IL-0001", 2, "", incidentlib.WriteOptions{}); incidentlib.ErrorCode(err) != incidentlib.ENOTFOUND {
		t.Fatalf("restore of a version purged with its content: %v", err)
	}
	wrClean(t, db)

	// The live file keeps the text in pages bbolt freed (it does not clear
	// them): what makes a copy of the file's pages no backup after a purge.
	if raw, _ := os.ReadFile(path); !bytes.Contains(raw, []byte(purgeMarker)) {
		t.Fatal("the live file holds the purged text in no free page: the backup below proves nothing")
	}
	backup := filepath.Join(t.TempDir(), "backup.db")
	f, err := os.Create(backup)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := db.Maintenance().Backup(context.Background(), f); err != nil {
		t.Fatal(err)
	}
	f.Close()
	mustHoldNoMarker(t, "backup", backup, purgeMarker)
	bdb, err := storage.Open(backup, storage.Options{NoSync: true, Taxonomy: seeds.MustTaxonomy()})
	if err != nil {
		t.Fatal(err)
	}
	if wrExport(t, bdb) != wrExport(t, db) {
		t.Fatal("the backup holds other records")
	}
	wrClean(t, bdb)
	bdb.Close()

	db.Close()
	if err := storage.Compact(path, path, storage.Options{Taxonomy: seeds.MustTaxonomy()}); err != nil {
		t.Fatal(err)
	}
	mustHoldNoMarker(t, "compact", path, purgeMarker)
}

// TestPurgeOfTheLiveContent: a version whose content is the live record's
// is refused (INVALID) and nothing is written, whichever version is
// named; once the incident is deleted, the purge removes every copy, the
// last record before the delete included.
func TestPurgeOfTheLiveContent(t *testing.T) {
	ctx := asUser("root", incidentlib.RoleAdmin)
	db, _ := purgeStore(t, false) // v3 REQUEST_CHANGES is live, the content of v1
	seq := db.Incidents().Seq()
	for _, v := range []int{1, 2, 3} {
		t.Run("Version"+string(rune('0'+v)), func(t *testing.T) {
			if _, err := db.Incidents().PurgeVersion(ctx, "IL-0001", v, "takedown"); incidentlib.ErrorCode(err) != incidentlib.EINVALID {
				t.Fatalf("purge of the live content: %v", err)
			}
			if db.Incidents().Seq() != seq {
				t.Fatal("a refused purge wrote")
			}
		})
	}
	t.Run("AfterDelete", func(t *testing.T) {
		if _, err := db.Incidents().DeleteIncident(ctx, "IL-0001", incidentlib.WriteOptions{}); err != nil {
			t.Fatal(err)
		}
		e, err := db.Incidents().PurgeVersion(ctx, "IL-0001", 1, "takedown")
		if err != nil || !slices.Equal(e.Purged, []int{1, 2, 3}) {
			t.Fatalf("%+v %v", e, err)
		}
		mustNotServe(t, db)
		inc, _, err := db.Versions().DeletedIncident(ctx, "IL-0001")
		if err != nil || inc == nil || inc.Title.En != "" {
			t.Fatalf("the deleted incident's last record: %+v %v", inc, err)
		}
		wrClean(t, db)
	})
}

// TestPurgeTwice: a purge of a version already without content (purged,
// or removed with the same content by another purge) answers the PURGE
// that removed it and writes nothing.
func TestPurgeTwice(t *testing.T) {
	ctx := asUser("root", incidentlib.RoleAdmin)
	db, _ := purgeStore(t, true)
	first, err := db.Incidents().PurgeVersion(ctx, "IL-0001", 1, "takedown")
	if err != nil {
		t.Fatal(err)
	}
	seq, n := db.Incidents().Seq(), len(hsHistory(t, db, "IL-0001"))
	for _, v := range []int{1, 2, 3} {
		t.Run("Version"+string(rune('0'+v)), func(t *testing.T) {
			again, err := db.Incidents().PurgeVersion(ctx, "IL-0001", v, "takedown again")
			if err != nil {
				t.Fatal(err)
			}
			if again.Version != first.Version || again.Action != incidentlib.ActionPurge {
				t.Fatalf("the answer is %+v, want the PURGE version %d", again, first.Version)
			}
			if db.Incidents().Seq() != seq || len(hsHistory(t, db, "IL-0001")) != n {
				t.Fatal("a second purge wrote")
			}
		})
	}
	t.Run("Delete", func(t *testing.T) { // a tombstone has no content: its own entry, nothing written
		if _, err := db.Incidents().DeleteIncident(ctx, "IL-0002", incidentlib.WriteOptions{}); err != nil {
			t.Fatal(err)
		}
		seq := db.Incidents().Seq()
		e, err := db.Incidents().PurgeVersion(ctx, "IL-0002", 2, "takedown")
		if err != nil || e.Action != incidentlib.ActionDelete || e.Version != 2 || db.Incidents().Seq() != seq {
			t.Fatalf("%+v %v", e, err)
		}
	})
	t.Run("ErrNotFound", func(t *testing.T) {
		if _, err := db.Incidents().PurgeVersion(ctx, "IL-0001", 9, "takedown"); incidentlib.ErrorCode(err) != incidentlib.ENOTFOUND {
			t.Fatalf("%v", err)
		}
	})
}

// TestPurgeOnAReplica: a replica that applied the versions before a purge
// removes the same content when it applies the PURGE from the history
// feed (record, the one place of the rule), and a replica that starts
// after the purge never receives it.
func TestPurgeOnAReplica(t *testing.T) {
	ctx := context.Background()
	src, _ := purgeStore(t, true)
	follow := func(t *testing.T, dst *storage.DB, from uint64) uint64 {
		t.Helper()
		changes, err := src.Versions().VersionsSince(ctx, from, 1000)
		if err != nil {
			t.Fatal(err)
		}
		for i, c := range changes { // through the feed's lines, as a replica reads them
			var buf bytes.Buffer
			bw := bufio.NewWriter(&buf)
			if err := changefeed.WriteVersionLine(bw, c); err != nil || bw.Flush() != nil {
				t.Fatal(err)
			}
			if changes[i], err = changefeed.ParseChangeLine(buf.Bytes()); err != nil {
				t.Fatal(err)
			}
		}
		pos, err := dst.Incidents().ApplyChanges(ctx, from, changes)
		if err != nil {
			t.Fatal(err)
		}
		return pos
	}
	before := wrOpen(t, true)
	pos := follow(t, before, 0)
	if v1, _ := before.Versions().IncidentVersion(ctx, "IL-0001", 2); v1 == nil || !bytes.Contains(v1.Record, []byte(purgeMarker)) {
		t.Fatal("the replica does not hold the text before the purge")
	}
	if _, err := src.Incidents().PurgeVersion(asUser("root", incidentlib.RoleAdmin), "IL-0001", 1, "takedown"); err != nil {
		t.Fatal(err)
	}
	follow(t, before, pos)
	after := wrOpen(t, true)
	follow(t, after, 0)
	for name, dst := range map[string]*storage.DB{"Following": before, "FromTheStart": after} {
		t.Run(name, func(t *testing.T) {
			mustNotServe(t, dst)
			e, err := dst.Versions().IncidentVersion(ctx, "IL-0001", 5)
			if err != nil || e.Action != incidentlib.ActionPurge || e.Target != 1 || !slices.Equal(e.Purged, []int{1, 2, 3}) {
				t.Fatalf("%+v %v", e, err)
			}
		})
	}
}

// TestPurgeReadersEnumerated walks every method of *storage.DB that
// returns a record, a version or a change, or writes to an io.Writer:
// each is read after a purge and must not serve the purged text, or is a
// write that returns the record it writes (the live content, which a
// purge refuses). A new method of that shape fails here until it is
// listed.
func TestPurgeReadersEnumerated(t *testing.T) {
	ctx := context.Background()
	db, _ := purgeStore(t, true)
	enc := func(v any, err error) []byte {
		t.Helper()
		if err != nil {
			t.Fatal(err)
		}
		return allText(reflect.ValueOf(v), nil)
	}
	write := func(f func(io.Writer) error) []byte {
		t.Helper()
		var buf bytes.Buffer
		if err := f(&buf); err != nil {
			t.Fatal(err)
		}
		return buf.Bytes()
	}
	reads := map[string]func() []byte{
		"AllIncidents": func() []byte { return enc(db.Incidents().AllIncidents(ctx)) },
		"Backup": func() []byte {
			return write(func(w io.Writer) error { _, err := db.Maintenance().Backup(ctx, w); return err })
		},
		"ChangesSince":       func() []byte { return enc(db.Incidents().ChangesSince(ctx, 0, 1000)) },
		"RawChangesSince":    func() []byte { return enc(db.Incidents().RawChangesSince(ctx, 0, 1000)) },
		"VersionsSince":      func() []byte { return enc(db.Versions().VersionsSince(ctx, 0, 1000)) },
		"Export":             func() []byte { return write(func(w io.Writer) error { return db.Maintenance().Export(ctx, w) }) },
		"ExportHistory":      func() []byte { return write(func(w io.Writer) error { return db.Versions().ExportHistory(ctx, w) }) },
		"FindIncidentsByIDs": func() []byte { return enc(db.Incidents().FindIncidentsByIDs(ctx, []string{"IL-0001", "IL-0002"})) },
		"FindIncidents": func() []byte {
			return enc(db.Incidents().FindIncidents(ctx, incidentlib.IncidentFilter{}, incidentlib.IncidentOrder{}, incidentlib.PageArgs{First: wrPtr(100)}))
		},
		"ReadSnapshot": func() []byte {
			s := db.Incidents().ReadSnapshot(ctx)
			defer s.Release()
			return enc(s.FindIncidentsByIDs(ctx, []string{"IL-0001"}))
		},
		"RecordsByNumber": func() []byte { return enc(db.Incidents().RecordsByNumber(ctx, []uint32{1, 2})) },
		"History":         func() []byte { return enc(db.Versions().History(ctx, "IL-0001", incidentlib.MaxPageSize, 0)) },
		"IncidentVersion": func() []byte {
			var all []byte
			for v := 1; v <= 5; v++ {
				all = append(all, enc(db.Versions().IncidentVersion(ctx, "IL-0001", v))...)
			}
			return all
		},
		"DeletedIncident": func() []byte {
			inc, e, err := db.Versions().DeletedIncident(ctx, "IL-0001")
			return enc([]any{inc, e}, err)
		},
		"Similar": func() []byte { return enc(db.Incidents().Similar(ctx, "IL-0002", 10)) },
	}
	// The reads of the history serve the text before the purge: the
	// probes see what they serve.
	for _, name := range []string{"Backup", "VersionsSince", "ExportHistory", "History", "IncidentVersion"} {
		if !bytes.Contains(reads[name](), []byte(purgeMarker)) {
			t.Fatalf("%s does not serve the text before the purge", name)
		}
	}
	if _, err := db.Incidents().PurgeVersion(asUser("root", incidentlib.RoleAdmin), "IL-0001", 1, "takedown"); err != nil {
		t.Fatal(err)
	}
	writes := map[string]bool{"UpsertIncident": true, "SubmitForReview": true, "DecideReview": true, "WithdrawIncident": true,
		"RestoreIncident": true, "PurgeVersion": true}
	serves := []reflect.Type{reflect.TypeFor[incidentlib.Incident](), reflect.TypeFor[incidentlib.IncidentVersion](),
		reflect.TypeFor[incidentlib.VersionPage](), reflect.TypeFor[incidentlib.IncidentPage](), reflect.TypeFor[incidentlib.Change](),
		reflect.TypeFor[incidentlib.StoredRecord](), reflect.TypeFor[incidentlib.SimilarIncident](), reflect.TypeFor[incidentlib.Snapshot]()}
	is := func(ty reflect.Type) bool {
		for ty.Kind() == reflect.Pointer || ty.Kind() == reflect.Slice {
			ty = ty.Elem()
		}
		return slices.Contains(serves, ty)
	}
	writer := reflect.TypeFor[io.Writer]()
	var methods []reflect.Method // every room's
	for _, room := range rooms {
		for i := range room.NumMethod() {
			methods = append(methods, room.Method(i))
		}
	}
	seen := 0
	for _, meth := range methods {
		hit := false
		for j := range meth.Type.NumOut() {
			hit = hit || is(meth.Type.Out(j))
		}
		for j := 1; j < meth.Type.NumIn(); j++ {
			hit = hit || meth.Type.In(j) == writer
		}
		if !hit {
			continue
		}
		seen++
		t.Run(meth.Name, func(t *testing.T) {
			read, ok := reads[meth.Name]
			switch {
			case ok:
				if bytes.Contains(read(), []byte(purgeMarker)) {
					t.Fatalf("%s serves the purged text", meth.Name)
				}
			case writes[meth.Name]:
			default:
				t.Fatalf("%s returns records, versions or changes: add it to this test's reads (or writes)", meth.Name)
			}
		})
	}
	if seen != len(reads)+len(writes) {
		t.Errorf("%d methods found, %d listed: a listed one is gone or no longer returns records", seen, len(reads)+len(writes))
	}
}

// allText appends every string and byte slice reachable from v (through
// pointers, interfaces, slices, maps and struct fields, unexported ones
// included), each on a line of its own.
func allText(v reflect.Value, out []byte) []byte {
	switch v.Kind() {
	case reflect.Pointer, reflect.Interface:
		if !v.IsNil() {
			out = allText(v.Elem(), out)
		}
	case reflect.String:
		out = append(append(out, v.String()...), '\n')
	case reflect.Slice, reflect.Array:
		if v.Type().Elem().Kind() == reflect.Uint8 && v.Kind() == reflect.Slice {
			return append(append(out, v.Bytes()...), '\n')
		}
		for i := range v.Len() {
			out = allText(v.Index(i), out)
		}
	case reflect.Map:
		it := v.MapRange()
		for it.Next() {
			out = allText(it.Value(), allText(it.Key(), out))
		}
	case reflect.Struct:
		for i := range v.NumField() {
			out = allText(v.Field(i), out)
		}
	}
	return out
}
