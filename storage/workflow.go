package storage

import (
	"context"
	"encoding/json"
	"slices"
	"strings"

	"github.com/incidentlib/incidentlib"
)

// The review workflow and the history's own writes: submit, review
// decisions, withdraw, restore and purge (incidentlib.HistoryWriter).
// Each writes one version with the author from the request's identity.

// MaxCommentLen is the longest comment or reason, in characters.
const MaxCommentLen = 2000

// checkComment checks a comment or reason (withdrawal, purge, review,
// restore) with the text rules of multi-line text
// (incidentlib.CheckComment): no control character but tab and line
// breaks.
func checkComment(field, s string) error { return incidentlib.CheckComment(field, s, MaxCommentLen) }

// reviewArgs checks what a review action or a restore of id is given
// before it reads the store: the id, the expected version and stamp, the
// comment's length. It returns the id's number.
func reviewArgs(id, comment string, opts incidentlib.WriteOptions) (uint32, error) {
	n, err := parseIncidentID(id)
	if err != nil {
		return 0, err
	}
	if err := validateExpected(opts); err != nil {
		return 0, err
	}
	if err := checkComment("comment", comment); err != nil {
		return 0, err
	}
	return n, nil
}

// transition writes one review action on id: allowed says whether the
// incident's state allows it (else EINVALIDSTATE), change makes the new
// record.
func (db *DB) transition(ctx context.Context, id string, action incidentlib.ChangeAction, comment string, opts incidentlib.WriteOptions,
	allowed func(w *writeTx, n uint32, old *incidentlib.Incident) error, change func(w *writeTx, c *incidentlib.Incident)) (*incidentlib.Incident, error) {
	n, err := reviewArgs(id, comment, opts)
	if err != nil {
		return nil, err
	}
	var old, out *incidentlib.Incident
	err = db.mutateAs(ctx, action, strings.TrimSpace(comment), func(w *writeTx) error {
		out = nil
		var err error
		if old, err = w.expect(n, id, true, opts); err != nil {
			return err
		}
		return allowed(w, n, old)
	}, func(w *writeTx) error {
		c := *old
		c.UpdatedAt = w.now
		change(w, &c)
		var err error
		out, err = w.putStored(n, &c)
		return err
	})
	if err != nil {
		return nil, err
	}
	return out, nil
}

func invalidState(id string, s incidentlib.ReviewState, what string) error {
	return incidentlib.FieldErrorf(incidentlib.EINVALIDSTATE, []string{"id"}, "incident %s is %s: %s", id, s, what)
}

// SubmitForReview moves an incident from DRAFT to IN_REVIEW; see
// incidentlib.HistoryWriter.
func (st Incidents) SubmitForReview(ctx context.Context, id string, opts incidentlib.WriteOptions) (*incidentlib.Incident, error) {
	return st.db.transition(ctx, id, incidentlib.ActionSubmit, "", opts, func(_ *writeTx, _ uint32, old *incidentlib.Incident) error {
		if s := old.State(); s != incidentlib.ReviewDraft {
			return invalidState(id, s, "only a DRAFT is submitted for review")
		}
		return nil
	}, func(_ *writeTx, c *incidentlib.Incident) { c.ReviewState = incidentlib.ReviewInReview })
}

// DecideReview records a reviewer's decision; see incidentlib.HistoryWriter.
func (st Incidents) DecideReview(ctx context.Context, id string, decision incidentlib.ReviewDecision, comment string, opts incidentlib.WriteOptions) (*incidentlib.Incident, error) {
	action := decision.Action()
	if action == "" {
		return nil, incidentlib.FieldErrorf(incidentlib.EINVALID, []string{"decision"}, "decision %q is not APPROVE, REQUEST_CHANGES or DISPUTE", decision)
	}
	return st.db.transition(ctx, id, action, comment, opts, func(w *writeTx, n uint32, old *incidentlib.Incident) error {
		if s := old.State(); s != incidentlib.ReviewInReview {
			return invalidState(id, s, "a review decision needs IN_REVIEW (submitForReview)")
		}
		if decision != incidentlib.DecisionApprove || st.db.allowSelfReview {
			return nil
		}
		authors, err := authorsSinceApproval(w.tx, n)
		if err != nil {
			return err
		}
		if err := addContentAuthors(w.tx, n, authors); err != nil {
			return err
		}
		if authors[w.author] {
			return incidentlib.FieldErrorf(incidentlib.ESELFREVIEW, []string{"id"},
				"%s wrote a version of incident %s since its last approval, or its content in any version, and may not approve it: another reviewer must", w.author, id)
		}
		return nil
	}, func(w *writeTx, c *incidentlib.Incident) {
		switch decision {
		case incidentlib.DecisionApprove:
			c.ReviewState = incidentlib.ReviewReviewed
			c.Review.ReviewedAt, c.Review.ReviewedBy = w.now, w.author
		case incidentlib.DecisionRequestChanges:
			c.ReviewState = incidentlib.ReviewDraft
		case incidentlib.DecisionDispute:
			c.ReviewState = incidentlib.ReviewDisputed
		}
	})
}

// WithdrawIncident withdraws an incident; see incidentlib.HistoryWriter.
func (st Incidents) WithdrawIncident(ctx context.Context, id, reason string, opts incidentlib.WriteOptions) (*incidentlib.Incident, error) {
	if strings.TrimSpace(reason) == "" {
		return nil, incidentlib.FieldErrorf(incidentlib.EINVALID, []string{"reason"}, "a withdrawal needs a reason")
	}
	if err := checkComment("reason", reason); err != nil {
		return nil, err
	}
	return st.db.transition(ctx, id, incidentlib.ActionWithdraw, reason, opts, func(_ *writeTx, _ uint32, old *incidentlib.Incident) error {
		if s := old.State(); s == incidentlib.ReviewWithdrawn {
			return invalidState(id, s, "it is already withdrawn")
		}
		return nil
	}, func(_ *writeTx, c *incidentlib.Incident) { c.ReviewState = incidentlib.ReviewWithdrawn })
}

// RestoreIncident writes a new version equal to an old one; see
// incidentlib.HistoryWriter.
func (st Incidents) RestoreIncident(ctx context.Context, id string, version int, comment string, opts incidentlib.WriteOptions) (*incidentlib.Incident, error) {
	n, err := reviewArgs(id, comment, opts)
	if err != nil {
		return nil, err
	}
	var rec *incidentlib.Incident
	var tomb *historyEntry
	var out *incidentlib.Incident
	err = st.db.mutateAs(ctx, incidentlib.ActionRestore, strings.TrimSpace(comment), func(w *writeTx) error {
		out, rec, tomb = nil, nil, nil
		old, err := w.get(n)
		if err != nil {
			return err
		}
		cur, last, err := lastEntry(w.tx, n)
		if err != nil {
			return err
		}
		if last == nil {
			return incidentlib.FieldErrorf(incidentlib.ENOTFOUND, []string{"id"}, "incident %s has no history", id)
		}
		if last.Deleted {
			tomb = last
		}
		if p := opts.ExpectedVersion; p != nil && *p != cur {
			return incidentlib.FieldErrorf(incidentlib.ECONFLICT, []string{"expected_version"},
				"incident %s was changed since it was read: it is at version %d, not %d", id, cur, *p)
		}
		if err := checkExpected(id, old, incidentlib.WriteOptions{ExpectedUpdatedAt: opts.ExpectedUpdatedAt}); err != nil {
			return err
		}
		data := versionRecord(w.tx, n, version)
		if data == nil {
			return incidentlib.FieldErrorf(incidentlib.ENOTFOUND, []string{"version"},
				"incident %s has no version %d with a record (never written, a delete, or purged)", id, version)
		}
		rec = new(incidentlib.Incident)
		if err := json.Unmarshal(data, rec); err != nil {
			return err
		}
		rec.UpdatedAt = w.now
		rec.ReviewState = incidentlib.ReviewDraft
		rec.Review.ReviewedAt, rec.Review.ReviewedBy = "", ""
		if err := w.checkOrgs(n, rec); err != nil {
			return err
		}
		return w.checkLinks([]*incidentlib.Incident{rec}, func(int) []string { return []string{"version"} })
	}, func(w *writeTx) error {
		var err error
		if out, err = w.putStored(n, rec); err != nil {
			return err
		}
		if tomb == nil {
			return nil
		}
		// The links the delete removed come back.
		for _, u := range tomb.Unlinked {
			sn, _ := incidentlib.ParseID(u.ID)
			src, err := w.get(sn)
			if err != nil {
				return err
			}
			if src == nil {
				continue
			}
			s := *src
			changed := false
			if u.Related && !slices.Contains(s.Related, id) {
				s.Related, changed = append(slices.Clone(s.Related), id), true
			}
			if u.Recurrence && s.RecurrenceOf == "" {
				s.RecurrenceOf, changed = id, true
			}
			if !changed {
				continue
			}
			s.UpdatedAt = w.now
			if err := w.checkLinks([]*incidentlib.Incident{&s}, func(int) []string { return []string{"id"} }); err != nil {
				return err
			}
			if err := w.put(&s); err != nil {
				return err
			}
		}
		return nil
	})
	if err != nil {
		return nil, err
	}
	return out, nil
}

// PurgeVersion removes the content of one version; see
// incidentlib.HistoryWriter.
func (st Incidents) PurgeVersion(ctx context.Context, id string, version int, reason string) (*incidentlib.IncidentVersion, error) {
	n, err := parseIncidentID(id)
	if err != nil {
		return nil, err
	}
	if strings.TrimSpace(reason) == "" {
		return nil, incidentlib.FieldErrorf(incidentlib.EINVALID, []string{"reason"}, "a purge needs a reason")
	}
	if err := checkComment("reason", reason); err != nil {
		return nil, err
	}
	var old *incidentlib.Incident
	var cur int
	var last *historyEntry
	var out *incidentlib.IncidentVersion
	var done bool
	err = st.db.mutateAs(ctx, incidentlib.ActionPurge, strings.TrimSpace(reason), func(w *writeTx) error {
		out, done = nil, false
		var err error
		if old, err = w.get(n); err != nil {
			return err
		}
		if cur, last, err = lastEntry(w.tx, n); err != nil {
			return err
		}
		if last == nil || w.tx.Bucket(bucketHistory).Get(histKey(n, version)) == nil {
			return incidentlib.FieldErrorf(incidentlib.ENOTFOUND, []string{"version"}, "incident %s has no version %d", id, version)
		}
		rec := versionRecord(w.tx, n, version)
		var curRec []byte
		if old != nil {
			curRec = versionRecord(w.tx, n, old.CurrentVersion())
		}
		if err := purgeRefusal(id, version, old, curRec, rec); err != nil {
			return err
		}
		if rec == nil {
			// No content left (purged before, or a delete): nothing is
			// written, the answer is the PURGE that removed it (purge.go).
			out, err = purgedBy(w.tx, id, n, version)
			done = true
			return err
		}
		return nil
	}, func(w *writeTx) error {
		if done {
			return nil
		}
		w.purgeTarget = version
		if old != nil {
			// A version of its own with the current record.
			c := *old
			if err := w.put(&c); err != nil {
				return err
			}
		} else {
			// A deleted incident: a tombstone again.
			w.seq++
			if err := w.record(n, cur+1, nil, nil, 0, true); err != nil {
				return err
			}
			if err := w.logChange(n, true); err != nil {
				return err
			}
		}
		v, e, err := lastEntry(w.tx, n)
		if err != nil {
			return err
		}
		out = e.version(id, v, versionRecord(w.tx, n, v))
		return nil
	})
	if err != nil {
		return nil, err
	}
	return out, nil
}
