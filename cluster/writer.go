package cluster

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"strconv"
	"time"

	"github.com/incidentlib/incidentlib"
	"github.com/incidentlib/incidentlib/tracing"
)

// Writer is the library's write side (incidentlib.Writer) on a cluster
// node: each write is
// checked on this node, stamped, published to the log and answered once
// the log acknowledged it on a quorum and this node applied it, with the
// result of that apply (the same on every node).
type Writer struct {
	node    *Node
	applier *Applier
	// reader reads the stored incidents (the stamps and conditions);
	// taxonomies the store's taxonomy as of now (the records' rules).
	reader     incidentlib.IncidentService
	taxonomies incidentlib.TaxonomyService
	tax        *incidentlib.Taxonomy
	// maxRecord is the record size limit of the store (0: the default).
	maxRecord int
	// Now is the node's clock (default time.Now).
	Now func() time.Time
}

// Reads is what a node's writer reads of its store: the incidents (to
// stamp a write and judge its condition) and the taxonomy as of now.
type Reads interface {
	incidentlib.IncidentService
	incidentlib.TaxonomyService
}

// NewWriter returns the writer of a node whose store reader and applier
// are given; tax and maxRecord are the store's record rules (tax is the
// fallback while the reader gives no taxonomy).
func NewWriter(node *Node, applier *Applier, reader Reads, tax *incidentlib.Taxonomy, maxRecord int) *Writer {
	return &Writer{node: node, applier: applier, reader: reader, taxonomies: reader, tax: tax, maxRecord: maxRecord, Now: time.Now}
}

// Every write of the library goes through the log: a write added to
// incidentlib.Writer fails to compile here until the writer carries it.
var _ incidentlib.Writer = (*Writer)(nil)

// maxTries bounds the publishes of a write without a condition whose
// incident another node wrote in between.
const maxTries = 5

// UpsertIncident publishes an upsert; see incidentlib.IncidentWriter.
func (wr *Writer) UpsertIncident(ctx context.Context, in *incidentlib.Incident, opts incidentlib.WriteOptions) (*incidentlib.Incident, error) {
	if in == nil {
		return nil, incidentlib.Errorf(incidentlib.EINVALID, "no incident given")
	}
	// The checks that need no stored state, before anything is published
	// (the store repeats them at apply, with the stored state).
	inc := *in
	inc.UpdatedAt = ""
	if err := inc.ValidateIncoming(wr.taxonomy(), wr.maxRecord, 0); err != nil {
		return nil, err
	}
	res, err := wr.write(ctx, IncidentSubject(inc.ID), &Write{Op: OpUpsert, ID: inc.ID, Record: in, ExpectedUpdatedAt: opts.ExpectedUpdatedAt, ExpectedVersion: opts.ExpectedVersion})
	if err != nil {
		return nil, err
	}
	return res.Incident, res.Err
}

// DeleteIncident publishes a delete; see incidentlib.IncidentWriter.
func (wr *Writer) DeleteIncident(ctx context.Context, id string, opts incidentlib.WriteOptions) (*incidentlib.DeleteResult, error) {
	if _, ok := incidentlib.ParseID(id); !ok {
		return nil, incidentlib.FieldErrorf(incidentlib.EINVALID, []string{"id"}, "id %q is not an incident id such as IL-0213", id)
	}
	res, err := wr.write(ctx, IncidentSubject(id), &Write{Op: OpDelete, ID: id, ExpectedUpdatedAt: opts.ExpectedUpdatedAt, ExpectedVersion: opts.ExpectedVersion})
	if err != nil {
		return nil, err
	}
	return res.Deleted, res.Err
}

// incidentWrite publishes a write of one incident that answers the
// incident: restore, the review workflow.
func (wr *Writer) incidentWrite(ctx context.Context, w *Write, opts incidentlib.WriteOptions) (*incidentlib.Incident, error) {
	if _, ok := incidentlib.ParseID(w.ID); !ok {
		return nil, incidentlib.FieldErrorf(incidentlib.EINVALID, []string{"id"}, "id %q is not an incident id such as IL-0213", w.ID)
	}
	w.ExpectedUpdatedAt, w.ExpectedVersion = opts.ExpectedUpdatedAt, opts.ExpectedVersion
	res, err := wr.write(ctx, IncidentSubject(w.ID), w)
	if err != nil {
		return nil, err
	}
	return res.Incident, res.Err
}

// RestoreIncident publishes a restore; see incidentlib.HistoryWriter.
func (wr *Writer) RestoreIncident(ctx context.Context, id string, version int, comment string, opts incidentlib.WriteOptions) (*incidentlib.Incident, error) {
	return wr.incidentWrite(ctx, &Write{Op: OpRestore, ID: id, Version: version, Comment: comment}, opts)
}

// SubmitForReview publishes a submission; see incidentlib.HistoryWriter.
func (wr *Writer) SubmitForReview(ctx context.Context, id string, opts incidentlib.WriteOptions) (*incidentlib.Incident, error) {
	return wr.incidentWrite(ctx, &Write{Op: OpSubmit, ID: id}, opts)
}

// DecideReview publishes a review decision; see incidentlib.HistoryWriter.
func (wr *Writer) DecideReview(ctx context.Context, id string, decision incidentlib.ReviewDecision, comment string, opts incidentlib.WriteOptions) (*incidentlib.Incident, error) {
	if !decision.IsValid() {
		return nil, incidentlib.FieldErrorf(incidentlib.EINVALID, []string{"decision"}, "decision %q is not APPROVE, REQUEST_CHANGES or DISPUTE", decision)
	}
	return wr.incidentWrite(ctx, &Write{Op: OpDecide, ID: id, Decision: decision, Comment: comment}, opts)
}

// WithdrawIncident publishes a withdrawal; see incidentlib.HistoryWriter.
func (wr *Writer) WithdrawIncident(ctx context.Context, id, reason string, opts incidentlib.WriteOptions) (*incidentlib.Incident, error) {
	return wr.incidentWrite(ctx, &Write{Op: OpWithdraw, ID: id, Comment: reason}, opts)
}

// PurgeVersion publishes a purge; see incidentlib.HistoryWriter.
func (wr *Writer) PurgeVersion(ctx context.Context, id string, version int, reason string) (*incidentlib.IncidentVersion, error) {
	if _, ok := incidentlib.ParseID(id); !ok {
		return nil, incidentlib.FieldErrorf(incidentlib.EINVALID, []string{"id"}, "id %q is not an incident id such as IL-0213", id)
	}
	res, err := wr.write(ctx, IncidentSubject(id), &Write{Op: OpPurge, ID: id, Version: version, Comment: reason})
	if err != nil {
		return nil, err
	}
	return res.Purged, res.Err
}

// ImportIncidents publishes an import as one write of the library (all
// or nothing at apply); see incidentlib.IncidentWriter.
func (wr *Writer) ImportIncidents(ctx context.Context, incs []*incidentlib.Incident, opts incidentlib.ImportOptions) (*incidentlib.ImportResult, error) {
	var es incidentlib.Errors
	for i, inc := range incs {
		if inc == nil {
			continue
		}
		for _, e := range incidentlib.ErrorList(inc.ValidateIncoming(wr.taxonomy(), wr.maxRecord, 0)) {
			es = append(es, &incidentlib.Error{Code: e.Code, Field: append([]string{strconv.Itoa(i)}, e.Field...), Message: fmt.Sprintf("record %d (%s): %s", i, inc.ID, e.Message)})
		}
	}
	if len(es) > 0 {
		return nil, es
	}
	w := &Write{Op: OpImport, Records: incs, KeepUpdatedAt: opts.KeepUpdatedAt, OnlyIfNew: opts.OnlyIfNew, Merges: opts.Merges}
	data, err := w.encode()
	if err != nil {
		return nil, err
	}
	// The key is bound to the whole import (a commit names only its
	// chunks' positions).
	records := digest(data)
	if len(data) > chunkBytes {
		chunks, err := wr.publishChunks(ctx, incs)
		if err != nil {
			return nil, err
		}
		w.Op, w.Records, w.Chunks = OpImportCommit, nil, chunks
	}
	res, err := wr.writeBound(ctx, SubjectLibrary, w, records)
	if err != nil {
		return nil, err
	}
	return res.Imported, res.Err
}

// chunkBytes is the most an import puts in one message.
const chunkBytes = MaxMessageBytes / 2

// publishChunks publishes the records of an import too large for one
// message in chunks, each its own message, and returns their log
// positions for the commit. Chunks without a commit are never applied.
func (wr *Writer) publishChunks(ctx context.Context, incs []*incidentlib.Incident) ([]uint64, error) {
	var seqs []uint64
	hdr := header(OpImportChunk)
	key := idempotencyKeyOf(ctx)
	send := func(part []*incidentlib.Incident) error {
		data, err := (&Write{Op: OpImportChunk, Records: part}).encode()
		if err != nil {
			return err
		}
		seq, _, err := wr.node.Publish(ctx, SubjectLibrary, fmt.Sprintf("%s:%d", key, len(seqs)), nil, hdr, data)
		if err != nil {
			return err
		}
		seqs = append(seqs, seq)
		return nil
	}
	var part []*incidentlib.Incident
	size := 0
	for _, inc := range incs {
		data, err := json.Marshal(inc)
		if err != nil {
			return nil, err
		}
		if size+len(data) > chunkBytes && len(part) > 0 {
			if err := send(part); err != nil {
				return nil, err
			}
			part, size = nil, 0
		}
		part, size = append(part, inc), size+len(data)+1
	}
	if len(part) > 0 {
		if err := send(part); err != nil {
			return nil, err
		}
	}
	return seqs, nil
}

// write publishes w on subject and waits for this node's apply of it.
// Before publishing, the node catches up with the subject's last write, so
// that it judges the write's condition and stamps its time against the
// latest state (never a false CONFLICT); the publish then expects that
// last write, so that two nodes writing one incident at once cannot both
// win. A write whose condition the node finds broken is not published.
func (wr *Writer) write(ctx context.Context, subject string, w *Write) (Result, error) {
	return wr.writeBound(ctx, subject, w, "")
}

// writeBound is write with more content to bind the write's idempotency
// key to (an import commit's records), beside the write's own
// (idempotency.go).
func (wr *Writer) writeBound(ctx context.Context, subject string, w *Write, more string) (Result, error) {
	key := idempotencyKeyOf(ctx)
	if id, ok := incidentlib.IdentityFrom(ctx); ok {
		w.Author, w.Role = id.Name, id.Role.String()
	}
	content := contentOf(w)
	if more != "" {
		content = digest([]byte(content + ":" + more))
	}
	if res, ok := wr.applier.resultOf(key); ok {
		// A retry of a write this node applied, or another write with
		// its key.
		if err := checkContent(res, key, content); err != nil {
			return Result{}, err
		}
		return res, nil
	}
	hdr := header(w.Op)
	hdr.Set(HeaderContent, content)
	ctx, span := tracing.StartKV(ctx, "cluster publish", "messaging.destination.name", subject)
	defer span.End()
	tracing.Inject(ctx, http.Header(hdr)) // the appliers' spans follow this one
	// A write refused before it is published (no leader during an
	// election, a node behind) is tried again until the write timeout:
	// nothing was written.
	deadline := time.Now().Add(wr.node.cfg.WriteTimeout)
	// An incident's write first guesses the subject's last sequence: the
	// last message on it this node applied (no request at all), else the
	// last in this node's own copy of the stream (a request to its own
	// server, not to the leader); the publish expects it, so a guess that
	// is behind is refused by the stream and never written, and the write
	// is judged again with the leader's answer. A condition that looks
	// broken on a guess is judged again the same way: a node behind never
	// answers a false CONFLICT.
	guess := subject != SubjectLibrary
	for try := 1; ; try++ {
		var last uint64
		var err error
		if guess {
			var ok bool
			if last, ok = wr.applier.lastSeqOf(subject); !ok {
				if last, err = wr.node.localSubjectSeq(ctx, subject); err != nil {
					guess = false
				}
			}
		}
		if !guess {
			last, err = wr.node.SubjectSeq(ctx, subject)
		}
		if err != nil {
			if wait(ctx, deadline, err) {
				continue
			}
			return Result{}, err
		}
		if err := wr.catchUp(ctx, last); err != nil {
			if guess {
				guess = false
				continue
			}
			return Result{}, err
		}
		if err := wr.stamp(ctx, w); err != nil {
			if guess && incidentlib.ErrorCode(err) == incidentlib.ECONFLICT {
				guess = false
				continue
			}
			return Result{}, err
		}
		data, err := w.encode()
		if err != nil {
			return Result{}, err
		}
		done, forget := wr.applier.expect(key)
		var expect *uint64
		if subject != SubjectLibrary {
			expect = &last
		}
		seq, dup, err := wr.node.Publish(ctx, subject, key, expect, hdr, data)
		if err != nil {
			forget()
			if incidentlib.ErrorCode(err) == incidentlib.ECONFLICT && guess {
				guess = false
				continue // the guess was behind: judge again on the leader's answer
			}
			if incidentlib.ErrorCode(err) == incidentlib.ECONFLICT && w.ExpectedUpdatedAt == nil && try < maxTries {
				continue // written meanwhile by another node: judge again
			}
			if wait(ctx, deadline, err) {
				continue
			}
			return Result{}, err
		}
		if dup {
			// A retry of a write the log has: its result, once applied.
			forget()
			if err := wr.catchUp(ctx, seq); err != nil {
				return Result{}, outcomeUnknown(err)
			}
			if res, ok := wr.applier.resultOf(key); ok {
				if err := checkContent(res, key, content); err != nil {
					return Result{}, err
				}
				return res, nil
			}
			if first, err := wr.node.msgContent(ctx, seq); err == nil && first != "" && first != content {
				return Result{}, errKeyReused(key)
			}
			return Result{}, incidentlib.Errorf(incidentlib.ECONFLICT, "this write was made already (idempotency key %q); read the incident for its result", key)
		}
		wctx, cancel := context.WithTimeout(ctx, wr.node.cfg.WriteTimeout)
		select {
		case res := <-done:
			cancel()
			return res, nil
		case <-wctx.Done():
			cancel()
			forget()
			return Result{}, incidentlib.Errorf(incidentlib.EOUTCOMEUNKNOWN,
				"the cluster acknowledged the write (log position %d) but this node has not applied it yet: read it again shortly", seq)
		}
	}
}

// catchUp waits, at most the write timeout, until this node applied the
// log up to seq.
func (wr *Writer) catchUp(ctx context.Context, seq uint64) error {
	ctx, cancel := context.WithTimeout(ctx, wr.node.cfg.WriteTimeout)
	defer cancel()
	if wr.applier.Applied() < seq {
		wr.node.Nudge(seq) // the follower asks its copy at once
	}
	if err := wr.applier.WaitApplied(ctx, seq); err != nil {
		if errors.Is(err, context.DeadlineExceeded) {
			return incidentlib.Errorf(incidentlib.EUNAVAILABLE, "this node is behind the log (at %d of %d); nothing was written", wr.applier.Applied(), seq)
		}
		return err
	}
	return nil
}

// stamp sets the write's time: the node's clock, but after the incident's
// previous updated_at (by 1µs at least), so that updated_at grows with
// every write; it also judges the write's condition against the stored
// record, so that a stale write is refused before it is published.
func (wr *Writer) stamp(ctx context.Context, w *Write) error {
	at := wr.Now().UTC().Truncate(time.Microsecond)
	if w.ID != "" {
		got, err := wr.reader.FindIncidentsByIDs(ctx, []string{w.ID})
		if err != nil {
			return err
		}
		var old *incidentlib.Incident
		if len(got) == 1 {
			old = got[0]
		}
		if old != nil {
			if prev, err := incidentlib.ParseTimestamp(old.UpdatedAt); err == nil && !at.After(prev) {
				at = prev.Add(time.Microsecond)
			}
		}
		if err := checkExpected(w.ID, old, w.ExpectedUpdatedAt); err != nil {
			return err
		}
		if err := checkVersion(w.ID, old, w.ExpectedVersion); err != nil {
			return err
		}
	}
	w.At = at
	return nil
}

// checkExpected is the store's optimistic concurrency check, made before
// publishing (the store makes it again at apply).
func checkExpected(id string, old *incidentlib.Incident, want *string) error {
	if want == nil {
		return nil
	}
	field := []string{"expected_updated_at"}
	switch {
	case old == nil && *want == "":
		return nil
	case old == nil:
		return incidentlib.FieldErrorf(incidentlib.ECONFLICT, field, "incident %s was expected with updated_at %s but is no longer in the library", id, *want)
	case *want == "":
		return incidentlib.FieldErrorf(incidentlib.ECONFLICT, field, "incident %s was expected not to exist, but it does (updated_at %s)", id, old.UpdatedAt)
	}
	a, err1 := incidentlib.ParseTimestamp(old.UpdatedAt)
	b, err2 := incidentlib.ParseTimestamp(*want)
	if err2 != nil {
		return incidentlib.FieldErrorf(incidentlib.EINVALID, field, "expected_updated_at %s", err2)
	}
	if err1 != nil || !a.Equal(b) {
		return incidentlib.FieldErrorf(incidentlib.ECONFLICT, field, "incident %s was changed since it was read: its updated_at is %s, not %s", id, old.UpdatedAt, *want)
	}
	return nil
}

func outcomeUnknown(err error) error {
	return incidentlib.Errorf(incidentlib.EOUTCOMEUNKNOWN, "the write is in the log but this node has not applied it: %v", err)
}

// wait sleeps a moment before a write refused with UNAVAILABLE is tried
// again, and reports whether it may be: before deadline, ctx alive.
func wait(ctx context.Context, deadline time.Time, err error) bool {
	if incidentlib.ErrorCode(err) != incidentlib.EUNAVAILABLE || time.Until(deadline) < 250*time.Millisecond {
		return false
	}
	select {
	case <-ctx.Done():
		return false
	case <-time.After(200 * time.Millisecond):
		return true
	}
}

// checkVersion is the store's check of the expected version, made before
// publishing (the store makes it again at apply). A deleted incident
// reads as absent here: the store judges it at apply.
func checkVersion(id string, old *incidentlib.Incident, want *int) error {
	if want == nil || old == nil {
		return nil
	}
	if cur := old.CurrentVersion(); cur != *want {
		return incidentlib.FieldErrorf(incidentlib.ECONFLICT, []string{"expected_version"}, "incident %s is at version %d, not %d", id, cur, *want)
	}
	return nil
}
