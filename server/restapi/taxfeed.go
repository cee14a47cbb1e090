package restapi

import (
	"bufio"
	"encoding/json"
	"net/http"
	"strconv"

	"github.com/incidentlib/incidentlib"
)

// The taxonomy's feed, for replicas:
//
//	GET /api/v1/taxonomy/changes?after=N&limit=M
//	    The history of the taxonomy and the organizations as JSONL: one
//	    entry (incidentlib.TaxonomyChange) per line numbered above N,
//	    oldest first, at most M (default DefaultFeedLimit, at most
//	    MaxFeedLimit); fewer than M lines means nothing more was there.
//	    Each entry carries the whole term or organization after the change,
//	    so applying the entries in order (storage ApplyTaxonomyChanges)
//	    gives a replica the same taxonomy. The Incidentlib-Seq header
//	    carries the store's sequence, read before the entries: every
//	    change of the taxonomy committed up to it is in the answer (or
//	    after its last line). Public like the taxonomy itself; the entries'
//	    authors are sent only to an admin's or a replica's token, as on
//	    the change feed.

// mountTaxonomyFeed adds the taxonomy's feed to mux when it is given the
// taxonomy's history (Deps.TaxonomyLog).
func (a *API) mountTaxonomyFeed(mux *http.ServeMux, tl incidentlib.TaxonomyLog, authed func(http.HandlerFunc) http.HandlerFunc) {
	if tl == nil {
		return
	}
	mux.HandleFunc("GET /api/v1/taxonomy/changes", authed(func(w http.ResponseWriter, r *http.Request) {
		a.taxonomyChanges(w, r, tl)
	}))
}

func (a *API) taxonomyChanges(w http.ResponseWriter, r *http.Request, tl incidentlib.TaxonomyLog) {
	q := r.URL.Query()
	var after uint64
	if v := q.Get("after"); v != "" {
		n, err := strconv.ParseUint(v, 10, 64)
		if err != nil {
			a.writeError(w, r, invalid("after", "after must be the number of an entry of the taxonomy's history (a whole number from 0), got %q", v))
			return
		}
		after = n
	}
	limit := DefaultFeedLimit
	if v := q.Get("limit"); v != "" {
		n, err := strconv.Atoi(v)
		if err != nil || n < 1 || n > MaxFeedLimit {
			a.writeError(w, r, invalid("limit", "limit must be a number of entries from 1 to %d, got %q", MaxFeedLimit, v))
			return
		}
		limit = n
	}
	// The sequence first: every entry committed up to it is read below.
	head := a.log.Seq()
	entries, err := tl.TaxonomyChangesAfter(r.Context(), after, limit)
	if err != nil {
		a.writeError(w, r, err)
		return
	}
	id, ok := incidentlib.IdentityFrom(r.Context())
	authors := ok && id.Role.Allows(incidentlib.RoleAdmin)
	h := w.Header()
	h.Set("Content-Type", "application/x-ndjson")
	h.Set("Cache-Control", "no-store")
	h.Set(SeqHeader, strconv.FormatUint(head, 10))
	bw := bufio.NewWriterSize(w, 64<<10)
	for _, e := range entries {
		if !authors {
			c := *e
			c.Author = ""
			e = &c
		}
		b, err := json.Marshal(e)
		if err != nil {
			a.logger.ErrorContext(r.Context(), "taxonomy feed write failed", "err", err, "n", e.Number)
			panic(http.ErrAbortHandler)
		}
		_, _ = bw.Write(append(b, '\n'))
	}
	_ = bw.Flush()
}
