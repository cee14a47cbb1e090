package storage

import (
	"context"
	"encoding/json"
	"runtime/debug"
	"slices"
	"sync/atomic"
	"time"

	bolt "go.etcd.io/bbolt"

	"github.com/incidentlib/incidentlib"
)

// mutState is how mutations share commits.
type mutState struct {
	// inflight counts the mutations waiting for or running their
	// transaction. A mutation alone commits at once; the ones that come
	// while a transaction runs share the next, one fsync for all
	// (groupCommit, fault.go).
	inflight atomic.Int32
	// cur is the commit the running write transaction belongs to. It is
	// touched only inside write transactions, which bbolt runs one at a
	// time, and read by that transaction's own commit handler.
	cur *commitState
}

// commitState is what the mutations of one write transaction share.
type commitState struct {
	tx    *bolt.Tx
	start time.Time
	seq   uint64 // the store's sequence after the last mutation that wrote
	// written are the records the transaction wrote, in order: committed,
	// they go into the record cache.
	written []writtenRecord
}

// joinCommit returns the commit state of tx, creating it (and the handler
// that observes and publishes the commit) for the first mutation in tx.
func (db *DB) joinCommit(tx *bolt.Tx) *commitState {
	if cs := db.mut.cur; cs != nil && cs.tx == tx {
		return cs
	}
	cs := &commitState{tx: tx, start: time.Now()}
	db.mut.cur = cs
	tx.OnCommit(func() {
		db.observeCommit(time.Since(cs.start))
		if db.cache != nil {
			for _, r := range cs.written {
				if r.inc == nil {
					db.cache.Remove(r.n)
				} else {
					db.cache.Add(r.n, &cachedIncident{version: r.version, inc: r.inc})
				}
			}
		}
		if cs.seq > 0 {
			db.publish(cs.seq)
		}
	})
	return cs
}

// publish raises the store's published sequence to seq, never lowering it
// (transactions may finish their commit handlers out of order), and wakes
// the readers waiting for it (SeqAbove) when it did.
func (db *DB) publish(seq uint64) {
	for {
		cur := db.seq.Load()
		if seq <= cur {
			return
		}
		if db.seq.CompareAndSwap(cur, seq) {
			break
		}
	}
	db.watch.wake()
}

// mutate runs one mutation in a write transaction that concurrent
// mutations may share. check only reads: an application error from it is
// the mutation's answer and nothing is written. apply writes: any error from
// it rolls the whole transaction back (bbolt then re-runs the others of the
// batch without it, and this one alone, which fails again). Both may run
// more than once, so they must start from the writeTx and reset whatever
// they report. mutate returns after the transaction committed.
func (db *DB) mutate(ctx context.Context, check, apply func(*writeTx) error) error {
	return db.mutateAs(ctx, "", "", check, apply)
}

// mutateAs is mutate whose writes record action and comment in the
// history, with the author from ctx.
func (db *DB) mutateAs(ctx context.Context, action incidentlib.ChangeAction, comment string, check, apply func(*writeTx) error) error {
	if err := ctx.Err(); err != nil {
		return ctxError(err)
	}
	if err := db.refuseWrite(); err != nil {
		return err
	}
	var refused error
	// fn recovers a damaged page itself (fault.go): batch runs it in a
	// goroutine of its own when it joins other mutations.
	fn := func(tx *bolt.Tx) (err error) {
		defer db.recoverFault(&err)
		defer faultGuard(debug.SetPanicOnFault(true))
		refused = nil
		cs := db.joinCommit(tx)
		w := newWriteTx(db, tx)
		w.begin(ctx, action, incidentlib.BootstrapAdmin.Name)
		w.comment = comment
		logged, err := w.startLogged(ctx) // a cluster log's write (cluster.go)
		if err != nil {
			return err
		}
		before := w.seq
		if err := check(w); err != nil {
			if incidentlib.ErrorCode(err) == incidentlib.EINTERNAL {
				return err
			}
			refused = err
			return w.endLogged(logged, err)
		}
		if err := apply(w); err != nil {
			return err
		}
		if w.seq == before {
			return w.endLogged(logged, nil) // nothing else to write
		}
		if err := w.flush(); err != nil {
			return err
		}
		cs.seq = w.seq
		cs.written = append(cs.written, w.written...)
		return w.endLogged(logged, nil)
	}
	if g, ok := db.logGroup(ctx); ok {
		// One of a group of the log's writes: on the group's transaction
		// (loggroup.go), committed with the others.
		if err := g.join(fn); err != nil {
			return db.writeError(err)
		}
		return refused
	}
	db.mut.inflight.Add(1)
	err := db.groupCommit(fn)
	db.mut.inflight.Add(-1)
	if err := db.writeError(err); err != nil {
		return err
	}
	return refused
}

// sameRecord reports whether two records have the same canonical IL-JSON.
func sameRecord(a, b *incidentlib.Incident) bool {
	x, err1 := json.Marshal(a)
	y, err2 := json.Marshal(b)
	return err1 == nil && err2 == nil && string(x) == string(y)
}

// storedAs reports whether record n is stored exactly as inc would be.
func (w *writeTx) storedAs(n uint32, inc *incidentlib.Incident) bool {
	data, err := CanonicalJSON(inc)
	return err == nil && w.storedBytes(n, data)
}

// storedBytes reports whether record n is stored as the canonical IL-JSON
// data.
func (w *writeTx) storedBytes(n uint32, data []byte) bool {
	v := w.tx.Bucket(bucketIncidents).Get(u32key(n))
	return len(v) > 8 && string(v[8:]) == string(data)
}

// sameTime reports whether two updated_at values name the same instant
// (or, when either does not parse, are the same text).
func sameTime(a, b string) bool {
	ta, err1 := incidentlib.ParseTimestamp(a)
	tb, err2 := incidentlib.ParseTimestamp(b)
	if err1 != nil || err2 != nil {
		return a == b
	}
	return ta.Equal(tb)
}

// checkExpected checks optimistic concurrency: opts.ExpectedUpdatedAt
// against the stored record old (nil when absent).
func checkExpected(id string, old *incidentlib.Incident, opts incidentlib.WriteOptions) error {
	if p := opts.ExpectedVersion; p != nil {
		field := []string{"expected_version"}
		switch {
		case old == nil && *p != 0:
			return incidentlib.FieldErrorf(incidentlib.ECONFLICT, field,
				"incident %s was expected at version %d but is not in the library", id, *p)
		case old != nil && old.CurrentVersion() != *p:
			return incidentlib.FieldErrorf(incidentlib.ECONFLICT, field,
				"incident %s was changed since it was read: it is at version %d, not %d", id, old.CurrentVersion(), *p)
		}
	}
	if opts.ExpectedUpdatedAt == nil {
		return nil
	}
	want := *opts.ExpectedUpdatedAt
	field := []string{"expected_updated_at"}
	switch {
	case old == nil && want == "":
		return nil
	case old == nil:
		return incidentlib.FieldErrorf(incidentlib.ECONFLICT, field,
			"incident %s was expected with updated_at %s but is no longer in the library", id, want)
	case want == "":
		return incidentlib.FieldErrorf(incidentlib.ECONFLICT, field,
			"incident %s was expected not to exist, but it does (updated_at %s)", id, old.UpdatedAt)
	case !sameTime(old.UpdatedAt, want):
		return incidentlib.FieldErrorf(incidentlib.ECONFLICT, field,
			"incident %s was changed since it was read: its updated_at is %s, not %s", id, old.UpdatedAt, want)
	}
	return nil
}

// expect reads record n, the incident id a mutation is about, and checks
// the mutation's preconditions against it: with mustExist, ENOTFOUND when
// there is no such incident; then the expected version (checkExpected).
// It returns the stored record, nil when there is none.
func (w *writeTx) expect(n uint32, id string, mustExist bool, opts incidentlib.WriteOptions) (*incidentlib.Incident, error) {
	old, err := w.get(n)
	if err != nil {
		return nil, err
	}
	if old == nil {
		_, e, err := lastEntry(w.tx, n)
		if err != nil {
			return nil, err
		}
		if e != nil && e.Deleted {
			if mustExist {
				return nil, incidentlib.FieldErrorf(incidentlib.ENOTFOUND, []string{"id"}, "incident %s is deleted", id)
			}
			return nil, deletedConflict(id)
		}
	}
	if old == nil && mustExist {
		return nil, incidentlib.FieldErrorf(incidentlib.ENOTFOUND, []string{"id"}, "incident %s is not in the library", id)
	}
	return old, checkExpected(id, old, opts)
}

func validateExpected(opts incidentlib.WriteOptions) error {
	if p := opts.ExpectedVersion; p != nil && *p < 0 {
		return incidentlib.FieldErrorf(incidentlib.EINVALID, []string{"expected_version"}, "expected_version must not be negative, got %d", *p)
	}
	if p := opts.ExpectedUpdatedAt; p != nil && *p != "" {
		if _, err := incidentlib.ParseTimestamp(*p); err != nil {
			return incidentlib.FieldErrorf(incidentlib.EINVALID, []string{"expected_updated_at"}, "expected_updated_at %s", err)
		}
	}
	return nil
}

// UpsertIncident validates in and stores it in place of any earlier
// version; see incidentlib.IncidentWriter.
func (st Incidents) UpsertIncident(ctx context.Context, in *incidentlib.Incident, opts incidentlib.WriteOptions) (*incidentlib.Incident, error) {
	if in == nil {
		return nil, incidentlib.Errorf(incidentlib.EINVALID, "no incident given")
	}
	var es incidentlib.Errors
	if in.Review.ReviewedAt != "" {
		es = append(es, incidentlib.FieldErrorf(incidentlib.EINVALID, []string{"review", "reviewed_at"},
			"review.reviewed_at is set by reviewing the incident, not by an upsert"))
	}
	if in.Review.ReviewedBy != "" {
		es = append(es, incidentlib.FieldErrorf(incidentlib.EINVALID, []string{"review", "reviewed_by"},
			"review.reviewed_by is set by reviewing the incident, not by an upsert"))
	}
	inc := *in
	inc.UpdatedAt = ""
	st.db.canonical(&inc) // aliases of terms (orgadmin.go)
	inc.Review.ReviewedAt, inc.Review.ReviewedBy = "", ""
	// The one validation of records from outside, the record's size
	// measured as its canonical IL-JSON (0 when it does not encode:
	// ValidateIncoming then words the encoder's error).
	es = append(es, incidentlib.ErrorList(inc.ValidateIncoming(st.db.Taxonomies().Taxonomy(), st.db.maxRecord, canonicalSize(&inc)))...)
	es = append(es, incidentlib.ErrorList(validateExpected(opts))...)
	if len(es) > 0 {
		return nil, es
	}
	n, _ := incidentlib.ParseID(inc.ID)
	var rec incidentlib.Incident
	var out *incidentlib.Incident
	err := st.db.mutate(ctx, func(w *writeTx) error {
		out = nil
		old, err := w.expect(n, inc.ID, false, opts)
		if err != nil {
			return err
		}
		rec = inc
		// The store keeps the history's members: the version, the review
		// state, the creation time and the first author.
		rec.Version, rec.ReviewState, rec.CreatedAt = 0, "", ""
		if old != nil {
			// Unchanged but for the stamp and the review: nothing to write.
			rec.UpdatedAt = old.UpdatedAt
			rec.Review.ReviewedAt, rec.Review.ReviewedBy = old.Review.ReviewedAt, old.Review.ReviewedBy
			rec.Review.WrittenBy = old.Review.WrittenBy
			rec.Version, rec.ReviewState, rec.CreatedAt = old.Version, old.ReviewState, old.CreatedAt
			if w.storedAs(n, &rec) {
				c := *old
				out = &c
				return nil
			}
			// A changed record needs a new review: an edit returns it to
			// DRAFT.
			rec.Review.ReviewedAt, rec.Review.ReviewedBy = "", ""
			rec.Version = 0
		} else {
			rec.CreatedAt = w.now
			rec.Review.WrittenBy = w.author
		}
		rec.ReviewState = incidentlib.ReviewDraft
		rec.UpdatedAt = w.now
		if err := w.resolveMerged(&rec); err != nil { // organizations merged away (orgadmin.go)
			return err
		}
		if err := rec.DeprecatedAdded(st.db.Taxonomies().Taxonomy(), old); err != nil {
			return err
		}
		if err := w.checkOrgs(n, &rec); err != nil {
			return err
		}
		return w.checkLinks([]*incidentlib.Incident{&rec}, func(int) []string { return nil })
	}, func(w *writeTx) error {
		if out != nil {
			return nil
		}
		var err error
		out, err = w.putStored(n, &rec)
		return err
	})
	if err != nil {
		return nil, err
	}
	return out, nil
}

// DeleteIncident removes an incident and every link to it; see
// incidentlib.IncidentWriter.
func (st Incidents) DeleteIncident(ctx context.Context, id string, opts incidentlib.WriteOptions) (*incidentlib.DeleteResult, error) {
	n, ok := incidentlib.ParseID(id)
	if !ok {
		return nil, incidentlib.FieldErrorf(incidentlib.EINVALID, []string{"id"}, "id %q is not an incident id such as IL-0213", id)
	}
	if err := validateExpected(opts); err != nil {
		return nil, err
	}
	var old *incidentlib.Incident
	var res *incidentlib.DeleteResult
	err := st.db.mutate(ctx, func(w *writeTx) error {
		res = nil
		var err error
		old, err = w.expect(n, id, true, opts)
		return err
	}, func(w *writeTx) error {
		linking, err := w.linking(n)
		if err != nil {
			return err
		}
		r := &incidentlib.DeleteResult{ID: id, Unlinked: []string{}}
		w.unlinked = nil
		for _, src := range linking {
			w.unlinked = append(w.unlinked, unlink{ID: src.ID, Related: slices.Contains(src.Related, id), Recurrence: src.RecurrenceOf == id})
			c := *src
			c.Related = slices.DeleteFunc(slices.Clone(src.Related), func(r string) bool { return r == id })
			if c.RecurrenceOf == id {
				c.RecurrenceOf = ""
			}
			c.UpdatedAt = w.now
			if err := w.put(&c); err != nil {
				return err
			}
			r.Unlinked = append(r.Unlinked, c.ID)
		}
		if err := w.remove(n, old); err != nil {
			return err
		}
		res = r
		return nil
	})
	if err != nil {
		return nil, err
	}
	return res, nil
}
