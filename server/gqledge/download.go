package gqledge

import (
	"bufio"
	"bytes"
	"crypto/sha256"
	"encoding/json"
	"io"
	"net/http"
	"strconv"
	"time"

	"github.com/incidentlib/incidentlib"
	"github.com/incidentlib/incidentlib/server/gqledge/respcache"
)

// Downloads: the edge's rate limit, response cache and HTTP caching for
// the REST exports (server/restapi: the CSV export and the Atom feed),
// which are streamed rather than computed whole.
//
//   - The request is charged its cost against the client's rate limit
//     first; a refusal is 429 with Retry-After and the REST error body.
//   - The ETag is known before anything is read: the edge's epoch, the
//     store sequence and the hash of the download's key (the path and the
//     normalized parameters), so If-None-Match is answered 304 without
//     reading the store.
//   - A stored response of the same key and sequence is replayed.
//   - Otherwise the body is streamed as it is written, and kept for the
//     cache when it ends within MaxCachedDownloadBytes (and the cache's
//     bound) with the store still at the sequence it started from; a
//     larger one is streamed and forgotten, so memory stays bounded
//     whatever the size of the download.

// MaxCachedDownloadBytes is the largest download body the response cache
// keeps (never more than the cache's own bound): a sixteenth of the
// default cache.
const MaxCachedDownloadBytes = DefaultResponseCacheBytes / 16

// downloadBuffer is the size of the buffer a download is written through.
const downloadBuffer = 64 << 10

// ServeDownload answers the GET r of a download whose body depends only
// on key and the store's content: the rate limit charges it cost (the cost
// limit when cost is not positive), then a 304, a cached response, or the
// body write streams (with contentType). It returns write's error only
// when nothing was written yet, for the caller to answer; a failure after
// the first byte cuts the response short (the client sees a broken body).
func (o *Edge) ServeDownload(w http.ResponseWriter, r *http.Request, key string, cost int, contentType string, write func(io.Writer) error) error {
	g := o.guard
	if g.rate != nil {
		if cost <= 0 {
			cost = g.lim.MaxCost
		}
		if ok, retry := g.rate.take(clientKey(r, g.proxy), cost); !ok {
			w.Header().Set("Retry-After", retryAfter(retry))
			b, _ := json.Marshal(map[string]any{"error": map[string]any{
				"code": CodeRateLimited, "message": "too many requests: the client has used its cost per second",
				"retryAfter": retrySeconds(retry)}})
			w.Header().Set("Content-Type", "application/json")
			w.Header().Set("Cache-Control", "no-store")
			w.WriteHeader(http.StatusTooManyRequests)
			_, _ = w.Write(append(b, '\n'))
			return nil
		}
	}
	k := respcache.Key(sha256.Sum256([]byte("download\x00" + key)))
	seq := o.changes.Seq()
	now, bornAfter, store := o.freshness()
	if o.cache.Enabled() {
		if e, _ := o.cache.Get(k, seq, bornAfter); e != nil {
			o.httpCaching.Replay(w, r, e, true)
			return nil
		}
	}
	e := &respcache.Entry{Key: k, Seq: seq, Status: http.StatusOK, Born: now}
	e.ETag = o.httpCaching.ETag(e)
	h := w.Header()
	o.httpCaching.SetHeaders(h, e.ETag)
	if _, authed := incidentlib.IdentityFrom(r.Context()); authed {
		h.Set("Cache-Control", "no-store")
	}
	if respcache.ETagMatch(r.Header.Get("If-None-Match"), e.ETag) {
		w.WriteHeader(http.StatusNotModified)
		return nil
	}
	if r.Method == http.MethodHead { // the headers a GET would send, without reading the body
		h.Set("Content-Type", contentType)
		w.WriteHeader(http.StatusOK)
		return nil
	}
	limit := int64(0)
	if o.cache.Enabled() && store {
		limit = min(MaxCachedDownloadBytes, o.cache.Max()-respcache.EntryOverhead-1024)
	}
	_ = http.NewResponseController(w).SetWriteDeadline(time.Now().Add(downloadDeadline))
	dw := &downloadWriter{w: w, contentType: contentType, limit: limit}
	bw := bufio.NewWriterSize(dw, downloadBuffer)
	err := write(bw)
	if err == nil {
		err = bw.Flush()
	}
	if err != nil {
		if !dw.started {
			for _, name := range []string{"Etag", "Cache-Control", "Vary"} {
				h.Del(name)
			}
			return err
		}
		o.logger.ErrorContext(r.Context(), "download cut short", "err", err, "path", r.URL.Path)
		panic(http.ErrAbortHandler)
	}
	if !dw.started { // an empty body
		dw.start()
	}
	if dw.capture != nil && o.changes.Seq() == seq {
		e.Header = http.Header{"Content-Type": {contentType}}
		e.Body = dw.capture.Bytes()
		e.Measure()
		e.ContentLength = []string{strconv.Itoa(len(e.Body))}
		e.HitDuration = o.reqMetrics.duration.WithLabelValues("download", respcache.Hit)
		o.cache.Put(e, o.changes.Seq())
	}
	return nil
}

// downloadWriter writes the status line and headers at the first byte,
// then the body, keeping a copy while it is under limit.
type downloadWriter struct {
	w           http.ResponseWriter
	contentType string
	limit       int64
	started     bool
	capture     *bytes.Buffer // nil once over limit (or when not caching)
}

func (d *downloadWriter) start() {
	d.started = true
	d.w.Header().Set("Content-Type", d.contentType)
	d.w.WriteHeader(http.StatusOK)
	if d.limit > 0 {
		d.capture = &bytes.Buffer{}
	}
}

func (d *downloadWriter) Write(b []byte) (int, error) {
	if !d.started {
		d.start()
	}
	if d.capture != nil {
		if int64(d.capture.Len()+len(b)) > d.limit {
			d.capture = nil
		} else {
			d.capture.Write(b)
		}
	}
	return d.w.Write(b)
}

// downloadDeadline is how long a download may take to write before the
// server gives up on a slow client.
const downloadDeadline = 10 * time.Minute
