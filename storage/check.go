package storage

import (
	"bytes"
	"context"
	"encoding/binary"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"slices"
	"sort"
	"strings"

	"github.com/RoaringBitmap/roaring/v2"
	bolt "go.etcd.io/bbolt"

	"github.com/incidentlib/incidentlib"
)

// Check verifies the file (bbolt's own consistency check), every record,
// every secondary index and reverse link against the records, and that no
// link dangles. It returns one line per problem; none means the store is
// consistent.
func (st Maintenance) Check(ctx context.Context) ([]string, error) {
	problems, _, err := st.CheckAll(ctx)
	return problems, err
}

// CheckAll is Check, and also lists, one line per problem, the warnings:
// stored records that break the rules writes were given after they were
// stored, control characters in text (incidentlib.RuleText) and the
// record size limit (Options.MaxRecordBytes, measured on the stored
// IL-JSON). They are not corruption: such records stay readable,
// exportable and replicable, and a write of them is refused until they
// are fixed. Every record is read and validated once for both lists.
func (st Maintenance) CheckAll(ctx context.Context) (problems, warnings []string, err error) {
	add := func(format string, args ...any) { problems = append(problems, fmt.Sprintf(format, args...)) }
	err = st.db.view(ctx, func(tx *bolt.Tx) error {
		for err := range tx.Check() {
			add("bbolt: %v", err)
		}
		if p := importMarker(tx); p != nil {
			add("%s", p)
		}
		want := expected{
			postings: map[string]*roaring.Bitmap{},
			orders:   map[string]bool{},
			sortKeys: map[uint32][]byte{},
			recs:     map[string]bool{},
			rels:     map[string]bool{},
			orgs:     map[string]string{},
		}
		var lastSeq uint64
		ids := map[uint32]bool{}
		var incs []*incidentlib.Incident
		err := tx.Bucket(bucketIncidents).ForEach(func(k, v []byte) error {
			if len(k) != 4 || len(v) < 8 {
				add("incidents: malformed entry %x", k)
				return nil
			}
			n := binary.BigEndian.Uint32(k)
			var inc incidentlib.Incident
			if err := json.Unmarshal(v[8:], &inc); err != nil {
				add("incident %s: does not decode: %v", incidentlib.FormatID(n), err)
				return nil
			}
			// Member names the decoded record cannot show: one named
			// twice (incidentlib.CheckMemberNames).
			for _, e := range incidentlib.ErrorList(incidentlib.CheckMemberNames(v[8:])) {
				add("incident %s: %s", incidentlib.FormatID(n), e.Message)
			}
			if inc.ID != incidentlib.FormatID(n) {
				add("incident %s: stored under the key of %s", inc.ID, incidentlib.FormatID(n))
			}
			// The rules of a record's structure are problems; those a
			// stored record may break from before they were made (text,
			// size) are warnings.
			if re := storedRuleErrors(&inc, st.db.Taxonomies().Taxonomy(), st.db.maxRecord, len(v)-8); re != nil {
				if p := re.Only(incidentlib.RuleStructure, incidentlib.RuleURLScheme); p != nil {
					add("incident %s: %v", inc.ID, p.Errors)
				}
				if w := re.Only(incidentlib.RuleSize, incidentlib.RuleText); w != nil {
					for _, e := range w.Errors {
						warnings = append(warnings, fmt.Sprintf("incident %s: %s", inc.ID, e.Message))
					}
				}
			}
			for _, w := range inc.TimelineDisagreements() { // events against timeline durations (events.go)
				warnings = append(warnings, fmt.Sprintf("incident %s: %s", inc.ID, w))
			}
			ids[n] = true
			incs = append(incs, &inc)
			want.add(n, &inc)
			lastSeq = max(lastSeq, binary.BigEndian.Uint64(v))
			return nil
		})
		if err != nil {
			return err
		}
		for _, inc := range incs {
			for _, r := range inc.Related {
				if m, _ := incidentlib.ParseID(r); !ids[m] && !st.db.upstreamLinks { // else an upstream link (UpstreamLinks)
					add("incident %s: related %s is not in the library (dangling link)", inc.ID, r)
				}
			}
			if inc.RecurrenceOf != "" {
				if m, _ := incidentlib.ParseID(inc.RecurrenceOf); !ids[m] && !st.db.upstreamLinks {
					add("incident %s: recurrence_of %s is not in the library (dangling link)", inc.ID, inc.RecurrenceOf)
				}
			}
		}
		for _, cycle := range recurrenceCycles(incs) {
			add("recurrence cycle: %s (recurrence_of links that loop; a feed or replica can bring them in: fix one record)",
				strings.Join(cycle, " -> "))
		}
		warnings = append(warnings, withoutPendingDurations(tx, want.postings)...) // durations.go
		warnings = append(warnings, withoutPendingPeriods(tx, want.postings)...)   // periods.go
		want.compare(tx, add)
		_ = tx.Bucket(bucketAliases).ForEach(func(k, v []byte) error {
			from, to := binary.BigEndian.Uint32(k), binary.BigEndian.Uint32(v)
			if ids[from] {
				add("aliases: %s is merged into %s but still stored", incidentlib.FormatID(from), incidentlib.FormatID(to))
			}
			// An alias to an incident deleted since resolves to nothing, like the deleted id.
			return nil
		})
		if seq := getU64(tx.Bucket(bucketMeta).Get(metaSeq)); seq < lastSeq {
			add("meta: sequence %d is behind a record written at %d", seq, lastSeq)
		}
		// Change log: one entry per incident, pointing back through changeidx.
		err = tx.Bucket(bucketChangeIdx).ForEach(func(k, v []byte) error {
			n := binary.BigEndian.Uint32(k)
			c := tx.Bucket(bucketChanges).Get(v)
			var ch change
			if c == nil || json.Unmarshal(c, &ch) != nil || ch.ID != incidentlib.FormatID(n) {
				add("changes: the latest change of %s (seq %d) is missing", incidentlib.FormatID(n), getU64(v))
			} else if ch.Deleted == ids[n] {
				add("changes: %s is %s but its latest change says deleted=%v", ch.ID, map[bool]string{true: "stored", false: "absent"}[ids[n]], ch.Deleted)
			}
			return nil
		})
		if err != nil {
			return err
		}
		for n := range ids {
			if tx.Bucket(bucketChangeIdx).Get(u32key(n)) == nil {
				add("changes: %s has no change entry", incidentlib.FormatID(n))
			}
		}
		checkGlossary(tx, add) // glossary.go
		if !st.db.noHistory {
			checkHistoryGrammar(tx, add) // historycheck.go
			return checkHistory(tx, add)
		}
		return nil
	})
	sort.Strings(problems)
	return problems, warnings, err
}

// recurrenceCycles finds the loops of recurrence_of links: each incident
// names at most one, so following them from every incident, three colours
// (unseen, on the path, done) find every loop once. Each cycle is listed
// from its smallest id and ends with it again.
func recurrenceCycles(incs []*incidentlib.Incident) [][]string {
	next := make(map[string]string, len(incs))
	for _, inc := range incs {
		if inc.RecurrenceOf != "" {
			next[inc.ID] = inc.RecurrenceOf
		}
	}
	const onPath, done = 1, 2
	state := make(map[string]int, len(next))
	var cycles [][]string
	for _, inc := range incs {
		var path []string
		id := inc.ID
		for id != "" && state[id] == 0 {
			state[id] = onPath
			path = append(path, id)
			id = next[id]
		}
		if id != "" && state[id] == onPath { // a new loop, from id on
			i := slices.Index(path, id)
			loop := slices.Clone(path[i:])
			least := slices.Index(loop, slices.Min(loop))
			loop = append(loop[least:], loop[:least]...)
			cycles = append(cycles, append(loop, loop[0]))
		}
		for _, p := range path {
			state[p] = done
		}
	}
	return cycles
}

// storedRuleErrors runs incidentlib.ValidateIncoming over a stored record
// of size bytes.
func storedRuleErrors(inc *incidentlib.Incident, tax *incidentlib.Taxonomy, maxRecord, size int) *incidentlib.RecordError {
	var re *incidentlib.RecordError
	if errors.As(inc.ValidateIncoming(tax, maxRecord, size), &re) {
		return re
	}
	return nil
}

// expected holds the indexes as they should be, rebuilt from the records.
type expected struct {
	postings map[string]*roaring.Bitmap
	orders   map[string]bool
	sortKeys map[uint32][]byte
	recs     map[string]bool
	rels     map[string]bool
	orgs     map[string]string
}

func (e *expected) add(n uint32, inc *incidentlib.Incident) {
	for _, p := range postingsOf(inc) {
		if e.postings[p] == nil {
			e.postings[p] = roaring.New()
		}
		e.postings[p].Add(n)
	}
	sk := sortKeyOf(inc)
	e.sortKeys[n] = sk.encode()
	for _, ord := range allOrders {
		e.orders[string(append([]byte{ord}, orderKey(ord, n, sk)...))] = true
	}
	if inc.RecurrenceOf != "" {
		t, _ := incidentlib.ParseID(inc.RecurrenceOf)
		e.recs[string(linkKey(t, n))] = true
		if e.postings[postHasRec] == nil {
			e.postings[postHasRec] = roaring.New()
		}
		e.postings[postHasRec].Add(t)
	}
	for _, r := range inc.Related {
		t, _ := incidentlib.ParseID(r)
		e.rels[string(linkKey(t, n))] = true
	}
	for _, o := range inc.Organizations() {
		e.orgs[o.Slug] = o.Name
	}
}

func (e *expected) compare(tx *bolt.Tx, add func(string, ...any)) {
	seen := map[string]bool{}
	_ = tx.Bucket(bucketPostings).ForEach(func(k, v []byte) error {
		name := string(k)
		seen[name] = true
		got := roaring.New()
		if err := got.UnmarshalBinary(v); err != nil {
			add("index %s: does not decode: %v", printable(name), err)
			return nil
		}
		want := e.postings[name]
		if want == nil {
			want = roaring.New()
		}
		if !got.Equals(want) {
			extra := roaring.AndNot(got, want)
			missing := roaring.AndNot(want, got)
			add("index %s: %d entries that no record has (e.g. %v), %d missing (e.g. %v)",
				printable(name), extra.GetCardinality(), head(extra), missing.GetCardinality(), head(missing))
		}
		return nil
	})
	for name := range e.postings {
		if !seen[name] {
			add("index %s: missing (%d incidents carry it)", printable(name), e.postings[name].GetCardinality())
		}
	}
	compareKeys(tx, bucketOrders, e.orders, "order index", add)
	compareKeys(tx, bucketRecurrences, e.recs, "recurrence links", add)
	compareKeys(tx, bucketRelatedRev, e.rels, "reverse related links", add)
	_ = tx.Bucket(bucketSortKeys).ForEach(func(k, v []byte) error {
		n := binary.BigEndian.Uint32(k)
		if w, ok := e.sortKeys[n]; !ok || !bytes.Equal(w, v) {
			add("sort keys: entry of %s is stale", incidentlib.FormatID(n))
		}
		delete(e.sortKeys, n)
		return nil
	})
	for n := range e.sortKeys {
		add("sort keys: %s is missing", incidentlib.FormatID(n))
	}
	_ = tx.Bucket(bucketOrgs).ForEach(func(k, v []byte) error {
		var o incidentlib.Organization
		name, ok := e.orgs[string(k)]
		if !ok && orgAdded(tx, k) && json.Unmarshal(v, &o) == nil && o.Slug == string(k) {
			return nil // added by an admin, no incident names it yet (orgadmin.go)
		}
		if json.Unmarshal(v, &o) != nil || !ok || o.Name != name || o.Slug != string(k) {
			add("organizations: entry %q does not match the incidents", k)
		}
		delete(e.orgs, string(k))
		return nil
	})
	for slug := range e.orgs {
		add("organizations: %q is missing", slug)
	}
}

func compareKeys(tx *bolt.Tx, bucket []byte, want map[string]bool, what string, add func(string, ...any)) {
	extra, missing := 0, 0
	_ = tx.Bucket(bucket).ForEach(func(k, _ []byte) error {
		if !want[string(k)] {
			extra++
		}
		delete(want, string(k))
		return nil
	})
	missing = len(want)
	if extra > 0 || missing > 0 {
		add("%s: %d stale entries, %d missing", what, extra, missing)
	}
}

func head(bm *roaring.Bitmap) []string {
	var out []string
	it := bm.Iterator()
	for it.HasNext() && len(out) < 3 {
		out = append(out, incidentlib.FormatID(it.Next()))
	}
	return out
}

func printable(name string) string {
	return string(bytes.ReplaceAll([]byte(name), []byte{0}, []byte{':'}))
}

// Export writes every record as JSONL in id order (by number), the
// canonical IL-JSON the store holds, so export, import, export is
// byte-identical.
func (st Maintenance) Export(ctx context.Context, w io.Writer) error {
	return st.db.view(ctx, func(tx *bolt.Tx) error {
		return tx.Bucket(bucketIncidents).ForEach(func(_, v []byte) error {
			if _, err := w.Write(v[8:]); err != nil {
				return err
			}
			_, err := w.Write([]byte{'\n'})
			return err
		})
	})
}

// Backup writes a consistent copy of the whole file from one read
// transaction; writers go on meanwhile.
func (st Maintenance) Backup(ctx context.Context, w io.Writer) (int64, error) {
	// After a purge the file's free pages may hold the purged content: the
	// copy is then a compacted one (purge.go).
	if purged, err := st.db.purgedPages(ctx); err != nil {
		return 0, err
	} else if purged {
		return st.db.compactedBackup(ctx, w)
	}
	var n int64
	err := st.db.view(ctx, func(tx *bolt.Tx) error {
		var err error
		n, err = tx.WriteTo(w)
		return err
	})
	return n, err
}

// StoreStats reads bbolt's statistics, the file size and the writes in
// flight (incidentlib.StoreMonitor). It takes no transaction and never
// waits on writers.
func (st Maintenance) StoreStats() incidentlib.StoreStats {
	bs := st.db.bolt.Stats()
	s := incidentlib.StoreStats{
		ReadTxTotal: bs.TxN, OpenReadTx: bs.OpenTxN,
		FreePages: bs.FreePageN, PendingPages: bs.PendingPageN, FreeAllocBytes: bs.FreeAlloc, FreelistBytes: bs.FreelistInuse,
		PageBytes: st.db.bolt.Info().PageSize, Seq: st.db.Incidents().Seq(), WritesInFlight: int(st.db.mut.inflight.Load()),
		Corrupt: st.db.fault.corrupt.Load() != nil, FullErrors: st.db.fault.full.Load(),
	}
	if fi, err := os.Stat(st.db.path); err == nil {
		s.FileBytes = fi.Size()
	}
	return s
}

// Compact copies the store at src into a new file at dst with bbolt's
// compaction (live data only), then renames it over dst atomically.
func Compact(src, dst string, opts Options) error {
	from, err := Open(src, Options{OpenTimeout: opts.OpenTimeout, Taxonomy: opts.Taxonomy, ReadOnly: true})
	if err != nil {
		return err
	}
	defer from.Close()
	tmp := dst + ".compact.tmp"
	_ = os.Remove(tmp)
	if err := compactInto(tmp, from.bolt); err != nil { // the copy holds no free page of src (purge.go)
		os.Remove(tmp)
		return err
	}
	from.Close()
	return os.Rename(tmp, dst)
}
