package restapi

import (
	"compress/gzip"
	"encoding/json"
	"io"
	"net/http"
	"sync"
	"time"

	"github.com/incidentlib/incidentlib"
)

// SnapshotPath is the snapshot's address: every incident an anonymous
// reader sees in lists, to download whole (docs/exports.md).
const SnapshotPath = "/api/v1/snapshot.jsonl.gz"

// SnapshotContentType is the snapshot's media type. The body is the file
// itself, a gzip stream: curl -O and wget save the .jsonl.gz as sent.
// With Content-Encoding: gzip over application/x-ndjson instead, clients
// that decode transfer codings (curl --compressed, browsers, Go's
// http.Client) would save uncompressed lines under a .gz name, and the
// ETag would name two representations.
const SnapshotContentType = "application/gzip"

// snapshotCost is the snapshot's charge against the rate limit: the cost
// limit, a whole bucket at the default burst, as the CSV export.
const snapshotCost = 0

// snapshotOrder is the snapshot's order, export's: by id (by number), a
// page at a time. An id never changes, so a write between two pages
// neither repeats nor skips an incident that was there throughout.
var snapshotOrder = incidentlib.IncidentOrder{Field: incidentlib.OrderID, Direction: incidentlib.Asc}

// gzipWriters keeps the snapshot's compressors (a deflate writer holds
// about a megabyte of tables) for the next download.
var gzipWriters = sync.Pool{New: func() any { return gzip.NewWriter(io.Discard) }}

// snapshot serves GET /api/v1/snapshot.jsonl.gz: the incidents lists show
// without a filter (withdrawn ones left out: the store's one visibility
// rule, through FindIncidents as every export), in id order, each as one
// line of the IL-JSON the store holds (json.Marshal of the record, the
// bytes `incidentlib export` writes for it, author names included: they
// are public), gzipped. The rate limit, the ETag (the store's sequence),
// the 304 and the response cache are the edge's Downloads, as for the
// other exports; a page of incidents is read at a time.
func (x *exports) snapshot(w http.ResponseWriter, r *http.Request) {
	for name := range r.URL.Query() {
		x.api.writeError(w, r, invalid(name, "unknown parameter %q: the snapshot takes none (it holds every incident lists show)", name))
		return
	}
	aw := &attachment{w: w, disposition: `attachment; filename="incidentlib-snapshot-` + time.Now().UTC().Format(time.DateOnly) + `.jsonl.gz"`}
	err := x.downloads.ServeDownload(aw, r, "snapshot", snapshotCost, SnapshotContentType, func(out io.Writer) error {
		zw := gzipWriters.Get().(*gzip.Writer)
		defer gzipWriters.Put(zw)
		zw.Reset(out) // writes nothing before the first line: the first page is read first
		enc := json.NewEncoder(zw)
		if err := x.eachIncident(r, incidentlib.IncidentFilter{}, snapshotOrder, 0, func(inc *incidentlib.Incident) error {
			return enc.Encode(inc) // json.Marshal's bytes and a newline
		}); err != nil {
			return err
		}
		return zw.Close()
	})
	if err != nil {
		x.api.writeError(w, r, err)
	}
}

// attachment adds Content-Disposition to a response when it succeeds (a
// 200, streamed or replayed from the cache), not to a 304 or an error.
type attachment struct {
	w           http.ResponseWriter
	disposition string
	wrote       bool
}

func (a *attachment) Header() http.Header { return a.w.Header() }

func (a *attachment) WriteHeader(code int) {
	if !a.wrote && code == http.StatusOK {
		a.w.Header().Set("Content-Disposition", a.disposition)
	}
	a.wrote = true
	a.w.WriteHeader(code)
}

func (a *attachment) Write(b []byte) (int, error) {
	if !a.wrote {
		a.WriteHeader(http.StatusOK)
	}
	return a.w.Write(b)
}

// Unwrap gives http.ResponseController the connection's writer (the
// download's write deadline).
func (a *attachment) Unwrap() http.ResponseWriter { return a.w }
