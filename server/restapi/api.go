// Package restapi is the REST side of the library, for other programs
// rather than pages: the change feed (GET /api/v1/changes) that replicas
// and the search index follow, and incidents as IL-JSON by id.
package restapi

import (
	"bufio"
	"context"
	"encoding/json"
	"errors"
	"log/slog"
	"net/http"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/incidentlib/incidentlib"
	"github.com/incidentlib/incidentlib/changefeed"
)

// The REST side of the library, for other programs rather than pages:
//
//	GET /api/v1/changes?since=SEQ&limit=N&wait=DURATION
//	    The change feed as JSONL: one line per change after SEQ, oldest
//	    first, at most N (default DefaultFeedLimit, at most MaxFeedLimit).
//	    A record line is the incident's IL-JSON with "seq" and "deleted"
//	    first: {"seq":12,"deleted":false,"id":"IL-0213",...}; a tombstone
//	    is {"seq":13,"deleted":true,"id":"IL-0005"}. The feed keeps only
//	    each incident's latest change, so applying it in order brings a
//	    copy level with the store. Fewer than N lines means nothing more
//	    was there up to the page's sequence. With wait (a duration such as 25s, at most MaxFeedWait)
//	    and nothing after SEQ yet, the answer is held until a change is
//	    committed or the wait is over (long poll); the headers are sent at
//	    once. The Incidentlib-Seq header carries the store's sequence when
//	    the page was read, and no change of the page is above it (a
//	    replica refuses a page that has one); a long poll's answer, whose
//	    header went out before the wait, carries it again as a trailer.
//	    SEQ above the store's sequence answers 409 (CONFLICT): the store
//	    is not the one the client followed.
//	    With a replica's or an admin's token the feed is the history feed
//	    (header Incidentlib-Feed: history): every version since SEQ, each
//	    line with its history entry ("entry": version, action, author,
//	    comment) after "deleted"; SEQ below what history compaction
//	    removed answers 410 (SEQUENCE_COMPACTED): start again from a
//	    snapshot.
//	GET /api/v1/incidents/{id}
//	    One incident as IL-JSON; 404 (NOT_FOUND) if it is not here.
//	GET /api/v1/incidents?ids=IL-0001,IL-0002
//	    A JSON array of the IL-JSON records of those ids that are here, in
//	    the order asked, each once; at most MaxIDsPerRequest ids.
//
// Errors are {"error": {"code": "INVALID", "message": "...", "field": [...]}}
// with the HTTP status of the code (incidentlib.HTTPStatus, the one table); bad parameters are 400.

// Limits of the REST API.
const (
	DefaultFeedLimit = 100
	MaxFeedLimit     = 1000
	MaxFeedWait      = 60 * time.Second
	MaxIDsPerRequest = 500
)

// SeqHeader carries the store's change sequence on feed answers.
const SeqHeader = "Incidentlib-Seq"

// FeedHeader is "history" on an answer of the history feed (every version
// with its entry), served to a replica's or an admin's token.
const FeedHeader = "Incidentlib-Feed"

// API serves the REST endpoints.
type API struct {
	log       incidentlib.ChangeLog
	history   incidentlib.HistoryLog // nil: the change feed serves current records only
	incidents incidentlib.IncidentService
	logger    *slog.Logger
	stopOnce  sync.Once
	stop      chan struct{} // closed by StopLongPolls
}

// Deps are what the REST endpoints read, each a named capability: none
// is found on another by type assertion.
type Deps struct {
	// Changes is the store's change log, which the change feed reads.
	Changes incidentlib.ChangeLog
	// History, if set, is the change log's history: with a replica's or
	// an admin's token the change feed is the history feed (every
	// version with its entry). Nil: the feed serves current records to
	// every token.
	History incidentlib.HistoryLog
	// TaxonomyLog, if set, is the taxonomy's history, served for
	// replicas at GET /api/v1/taxonomy/changes (taxfeed.go). Nil: no
	// such endpoint.
	TaxonomyLog incidentlib.TaxonomyLog
	// Incidents answers the reads of incidents by id.
	Incidents incidentlib.IncidentService
	// Authenticate identifies a request's sender (admin.Auth.Authenticate):
	// reads need no token, but a request with a token that is not valid
	// is refused with 401 before anything is read. Nil: no token is
	// looked at.
	Authenticate func(*http.Request) (*http.Request, error)
	// Logger receives internal errors.
	Logger *slog.Logger
}

// Mount adds the REST endpoints to mux, reading what d names.
func Mount(mux *http.ServeMux, d Deps) *API {
	a := &API{log: d.Changes, history: d.History, incidents: d.Incidents, logger: d.Logger, stop: make(chan struct{})}
	authenticate := d.Authenticate
	authed := func(h http.HandlerFunc) http.HandlerFunc {
		if authenticate == nil {
			return h
		}
		return func(w http.ResponseWriter, r *http.Request) {
			ar, err := authenticate(r)
			if err != nil {
				a.writeError(w, r, err)
				return
			}
			h(w, ar)
		}
	}
	mux.HandleFunc("GET /api/v1/changes", authed(a.changes))
	mux.HandleFunc("GET /api/v1/incidents/{id}", authed(a.incident))
	mux.HandleFunc("GET /api/v1/incidents", authed(a.incidentList))
	a.mountTaxonomyFeed(mux, d.TaxonomyLog, authed)
	return a
}

// StopLongPolls ends every held feed request at once (they answer with
// what they have, usually nothing) and makes later ones answer without
// waiting. Call it when the HTTP server shuts down
// (http.Server.RegisterOnShutdown), so long polls do not hold it up.
func (a *API) StopLongPolls() {
	a.stopOnce.Do(func() { close(a.stop) })
}

// writeError answers with err as JSON. Internal errors are logged and shown
// as "internal error" only.
func (a *API) writeError(w http.ResponseWriter, r *http.Request, err error) {
	code := incidentlib.ErrorCode(err)
	if errors.Is(err, context.DeadlineExceeded) {
		code, err = incidentlib.ETIMEOUT, incidentlib.Errorf(incidentlib.ETIMEOUT, "the request ran out of time")
	}
	if code == incidentlib.EINTERNAL {
		a.logger.ErrorContext(r.Context(), "internal error", "err", err, "path", r.URL.Path)
	}
	body := map[string]any{"code": code, "message": incidentlib.ErrorMessage(err)}
	if f := incidentlib.ErrorField(err); len(f) > 0 {
		body["field"] = f
	}
	b, _ := json.Marshal(map[string]any{"error": body})
	w.Header().Set("Content-Type", "application/json")
	w.Header().Set("Cache-Control", "no-store")
	if code == incidentlib.EUNAUTHENTICATED {
		w.Header().Set("WWW-Authenticate", `Bearer realm="incidentlib"`)
	}
	w.WriteHeader(incidentlib.HTTPStatus(code))
	_, _ = w.Write(append(b, '\n'))
}

func invalid(param, format string, args ...any) error {
	return incidentlib.FieldErrorf(incidentlib.EINVALID, []string{param}, format, args...)
}

// feedParams are the parameters of GET /api/v1/changes.
type feedParams struct {
	since uint64
	limit int
	wait  time.Duration
}

func parseFeedParams(r *http.Request) (feedParams, error) {
	q := r.URL.Query()
	p := feedParams{limit: DefaultFeedLimit}
	if v := q.Get("since"); v != "" {
		n, err := strconv.ParseUint(v, 10, 64)
		if err != nil {
			return p, invalid("since", "since must be a change sequence (a whole number from 0), got %q", v)
		}
		p.since = n
	}
	if v := q.Get("limit"); v != "" {
		n, err := strconv.Atoi(v)
		if err != nil || n < 1 || n > MaxFeedLimit {
			return p, invalid("limit", "limit must be a number of changes from 1 to %d, got %q", MaxFeedLimit, v)
		}
		p.limit = n
	}
	if v := q.Get("wait"); v != "" {
		d, err := time.ParseDuration(v)
		if err != nil || d < 0 || d > MaxFeedWait {
			return p, invalid("wait", "wait must be a duration with its unit from 0s to %s (such as 25s), got %q", MaxFeedWait, v)
		}
		p.wait = d
	}
	return p, nil
}

// changes serves the change feed.
func (a *API) changes(w http.ResponseWriter, r *http.Request) {
	p, err := parseFeedParams(r)
	if err != nil {
		a.writeError(w, r, err)
		return
	}
	db := a.log
	head := db.Seq()
	if p.since > head {
		a.writeError(w, r, incidentlib.Errorf(incidentlib.ECONFLICT,
			"since %d is above this store's sequence %d: this is not the store the client followed (it was replaced or restored)", p.since, head))
		return
	}
	h := w.Header()
	h.Set("Content-Type", "application/x-ndjson")
	h.Set("Cache-Control", "no-store")
	h.Set(SeqHeader, strconv.FormatUint(head, 10))
	sent := false
	if p.wait > 0 && p.since == head {
		// The header goes out before the wait: the sequence of the page
		// follows it as a trailer.
		h.Set("Trailer", SeqHeader)
		// Long poll: the headers go out now, so that a client's response
		// header timeout does not fire while the answer is held, and the
		// write deadline makes room for the wait.
		rc := http.NewResponseController(w)
		_ = rc.SetWriteDeadline(time.Now().Add(p.wait + 30*time.Second))
		w.WriteHeader(http.StatusOK)
		_ = rc.Flush()
		sent = true
		t := time.NewTimer(p.wait)
		select {
		case <-db.SeqAbove(p.since):
		case <-t.C:
		case <-a.stop:
		case <-r.Context().Done():
			t.Stop()
			return
		}
		t.Stop()
	}
	if sent {
		head = db.Seq()
	}
	// A replica's or an admin's token reads the history feed: every
	// version, with its author (changefeed/feed.go); without one, current records.
	history := a.history != nil
	if id, ok := incidentlib.IdentityFrom(r.Context()); !ok || !id.Role.Allows(incidentlib.RoleAdmin) {
		history = false
	}
	var changes []incidentlib.Change
	if history {
		changes, err = a.history.VersionsSince(r.Context(), p.since, p.limit)
		if !sent && err == nil {
			h.Set(FeedHeader, "history")
		}
	} else {
		changes, err = db.RawChangesSince(r.Context(), p.since, p.limit)
	}
	if err != nil {
		if sent {
			// The status is out: cut the answer short so that the client
			// sees a broken body rather than an empty page.
			a.logger.ErrorContext(r.Context(), "change feed read failed", "err", err)
			panic(http.ErrAbortHandler)
		}
		a.writeError(w, r, err)
		return
	}
	bw := bufio.NewWriterSize(w, 64<<10)
	for _, c := range changes {
		if c.Seq > head {
			// Committed since head was read: the page ends at head, the
			// sequence it names, and the next page starts there.
			break
		}
		if err := changefeed.WriteVersionLine(bw, c); err != nil {
			a.logger.ErrorContext(r.Context(), "change feed write failed", "err", err, "seq", c.Seq)
			panic(http.ErrAbortHandler)
		}
	}
	_ = bw.Flush()
	if sent {
		w.Header().Set(SeqHeader, strconv.FormatUint(head, 10))
	}
}

// incident serves one incident as IL-JSON.
func (a *API) incident(w http.ResponseWriter, r *http.Request) {
	id := r.PathValue("id")
	if _, ok := incidentlib.ParseID(id); !ok {
		a.writeError(w, r, invalid("id", "%q is not an incident id such as IL-0213", id))
		return
	}
	incs, err := a.incidents.FindIncidentsByIDs(r.Context(), []string{id})
	if err != nil {
		a.writeError(w, r, err)
		return
	}
	if incs[0] == nil {
		a.writeError(w, r, incidentlib.Errorf(incidentlib.ENOTFOUND, "incident %s is not in this library", id))
		return
	}
	b, err := json.Marshal(incs[0])
	if err != nil {
		a.writeError(w, r, err)
		return
	}
	w.Header().Set("Content-Type", "application/json")
	_, _ = w.Write(append(b, '\n'))
}

// incidentList serves the incidents of ids=a,b,c as a JSON array.
func (a *API) incidentList(w http.ResponseWriter, r *http.Request) {
	v := r.URL.Query().Get("ids")
	if v == "" {
		a.writeError(w, r, invalid("ids", "ids is required: a comma-separated list of incident ids such as IL-0213,IL-0216"))
		return
	}
	parts := strings.Split(v, ",")
	if len(parts) > MaxIDsPerRequest {
		a.writeError(w, r, invalid("ids", "ids takes at most %d incident ids, got %d", MaxIDsPerRequest, len(parts)))
		return
	}
	ids := make([]string, 0, len(parts))
	seen := make(map[string]bool, len(parts))
	for _, id := range parts {
		if _, ok := incidentlib.ParseID(id); !ok {
			a.writeError(w, r, invalid("ids", "%q is not an incident id such as IL-0213", id))
			return
		}
		if !seen[id] {
			seen[id] = true
			ids = append(ids, id)
		}
	}
	incs, err := a.incidents.FindIncidentsByIDs(r.Context(), ids)
	if err != nil {
		a.writeError(w, r, err)
		return
	}
	bw := bufio.NewWriterSize(w, 64<<10)
	w.Header().Set("Content-Type", "application/json")
	bw.WriteByte('[')
	n := 0
	for _, inc := range incs {
		if inc == nil {
			continue
		}
		b, err := json.Marshal(inc)
		if err != nil {
			panic(http.ErrAbortHandler)
		}
		if n > 0 {
			bw.WriteByte(',')
		}
		bw.Write(b)
		n++
	}
	bw.WriteString("]\n")
	_ = bw.Flush()
}
