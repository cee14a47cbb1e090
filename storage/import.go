package storage

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"strconv"

	"github.com/incidentlib/incidentlib"
)

// ImportIncidents validates every record and writes all of them in one
// transaction, or none. Records identical to the stored ones are left
// alone. Errors name the record by index in the Field path ("records", i).
func (st Incidents) ImportIncidents(ctx context.Context, incs []*incidentlib.Incident, opts incidentlib.ImportOptions) (*incidentlib.ImportResult, error) {
	field := func(i int) []string { return []string{"records", strconv.Itoa(i)} }
	var es incidentlib.Errors
	seen := map[string]int{}
	for i, inc := range incs {
		// The one validation of a record from outside, the record size
		// limit included (incidentlib.ValidateIncoming).
		err := inc.ValidateIncoming(st.db.Taxonomies().Taxonomy(), st.db.maxRecord, 0)
		for _, e := range incidentlib.ErrorList(err) {
			es = append(es, &incidentlib.Error{Code: e.Code, Field: append(field(i), e.Field...),
				Message: fmt.Sprintf("incident %s: %s", inc.ID, e.Message)})
		}
		if j, dup := seen[inc.ID]; dup && inc.ID != "" {
			es = append(es, incidentlib.FieldErrorf(incidentlib.EINVALID, append(field(i), "id"),
				"incident %s appears twice (records %d and %d)", inc.ID, j, i))
		}
		seen[inc.ID] = i
	}
	if len(es) > 0 {
		return nil, es
	}
	res := &incidentlib.ImportResult{}
	err := st.db.update(ctx, func(w *writeTx) error {
		w.begin(ctx, incidentlib.ActionImport, incidentlib.AuthorImport) // the history's author and action
		w.draft = opts.Draft
		*res = incidentlib.ImportResult{}
		if opts.OnlyIfNew {
			if w.seq > 0 || w.tx.Bucket(bucketIncidents).Stats().KeyN > 0 {
				return nil
			}
		}
		for i, in := range incs {
			if i%1024 == 0 {
				if err := ctx.Err(); err != nil {
					return ctxError(err)
				}
				if opts.Progress != nil {
					opts.Progress(i, len(incs))
				}
			}
			if err := w.importOne(in, nil, opts.KeepUpdatedAt, res); err != nil {
				if e := incidentlib.ErrorList(err); len(e) == 1 {
					return &incidentlib.Error{Code: e[0].Code, Field: append(field(i), e[0].Field...), Message: e[0].Message}
				}
				return err
			}
		}
		if opts.Progress != nil {
			opts.Progress(len(incs), len(incs))
		}
		if err := w.applyMerges(opts.Merges); err != nil {
			return err
		}
		stored, err := w.current(incs)
		if err != nil {
			return err
		}
		return w.checkLinks(stored, field)
	})
	if err != nil {
		return nil, err
	}
	return res, nil
}

// importOne writes one validated record of an import, counting it in res:
// a record identical to the stored one is left alone. Unless keepUpdatedAt,
// updated_at is stamped with the commit time, and a record that differs
// from the stored one only in the stamp is unchanged. data, when not nil,
// is CanonicalJSON(in) (made ahead of the transaction); it is used only
// when the record is stored as given (keepUpdatedAt).
func (w *writeTx) importOne(in *incidentlib.Incident, data []byte, keepUpdatedAt bool, res *incidentlib.ImportResult) error {
	inc := *in
	n, _ := incidentlib.ParseID(inc.ID)
	old, err := w.get(n)
	if err != nil {
		return err
	}
	if !keepUpdatedAt {
		inc.UpdatedAt = w.now
		data = nil
	}
	if w.draft {
		draftBefore(&inc, old) // importdraft.go
		data = nil
	}
	if old != nil {
		given := carryHistory(&inc, old) // the history's members, when the record has none
		if given != nil {
			data = nil
		}
		if !keepUpdatedAt {
			// A stamped record is unchanged if all but the stamp is.
			inc.UpdatedAt = old.UpdatedAt
			if !sameRecord(old, &inc) {
				inc.UpdatedAt = w.now
			}
		}
		a, _ := CanonicalJSON(old)
		b := data
		if b == nil {
			b, _ = CanonicalJSON(&inc)
		}
		if bytes.Equal(a, b) {
			res.Unchanged++
			return nil
		}
		if given != nil {
			inc.ReviewState = *given // a changed record: its own review state
		}
		res.Updated++
	} else {
		res.Created++
	}
	if w.draft {
		draftAfter(&inc)
	}
	if data == nil {
		if data, err = CanonicalJSON(&inc); err != nil {
			return err
		}
	}
	return w.putEncoded(&inc, data)
}

// CanonicalJSON returns json.Marshal(inc), the record's stored form,
// without json.Marshal's second scan of what Incident.MarshalJSON wrote.
// That scan compacts the text and escapes <, >, & and U+2028/U+2029 in
// its strings; MarshalJSON's text is already compact and, but for the
// record's own unknown members (which it copies as they were read), made
// by json.Marshal, which escapes them. A record with unknown members
// takes json.Marshal itself.
func CanonicalJSON(inc *incidentlib.Incident) ([]byte, error) {
	if len(inc.Extra) > 0 {
		return json.Marshal(inc)
	}
	b, err := inc.MarshalJSON()
	if err != nil {
		return json.Marshal(inc) // its error, as put's
	}
	return b, nil
}

// canonicalSize is the length of CanonicalJSON(inc), the size a record's
// validation measures, or 0 when it does not encode.
func canonicalSize(inc *incidentlib.Incident) int {
	b, err := CanonicalJSON(inc)
	if err != nil {
		return 0
	}
	return len(b)
}
