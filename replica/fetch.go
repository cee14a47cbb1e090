package replica

import (
	"bufio"
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"strconv"
	"strings"
	"time"

	"github.com/incidentlib/incidentlib"
	"github.com/incidentlib/incidentlib/changefeed"
	"github.com/incidentlib/incidentlib/outbound"
	"github.com/prometheus/client_golang/prometheus"
)

// A page of the primary's change feed: fetching it, reading its lines
// and deciding which records to skip.

// page is one page of the feed as fetched.
type page struct {
	since   uint64
	limit   int
	changes []incidentlib.Change
	sizes   []int  // each change's record size in bytes (ChangeRecordSize)
	skips   []skip // the changes of the page whose records were skipped
	head    uint64 // the primary's sequence when it served the page
	// cut marks a page that ends before the primary's answer did: at the
	// response size limit, or at a line too long to read. It is not level.
	cut bool
	err error
}

// skip is a change whose record the follower skipped.
type skip struct {
	seq  uint64
	id   string
	rule incidentlib.Rule
	why  string
}

// report counts each skipped entry in counter by its rule and logs it at
// WARN with msg, the entry's position (under key) and id (under idKey).
func report(logger *slog.Logger, counter *prometheus.CounterVec, skips []skip, msg, key, idKey string) {
	for _, sk := range skips {
		counter.WithLabelValues(string(sk.rule)).Inc()
		logger.Warn(msg, key, sk.seq, idKey, sk.id, "rule", string(sk.rule), "err", sk.why)
	}
}

// linePrefixBytes is the most a change line adds to its record's IL-JSON:
// {"seq":18446744073709551615,"deleted":false, less the record's "{".
const linePrefixBytes = 64

// fetch reads one page of the feed. A page is returned only if it was read
// to its end, or to the response size limit or a line too long to read
// (then it is cut there: every change before is whole, and the long line's
// change is skipped); a connection cut mid-body is an error, never a short
// page. A record that does not decode becomes a Skipped change; the others
// are validated when the page is applied (page.validate). A page with a change above the primary's sequence of the page
// (the Incidentlib-Seq header, or its trailer after a long poll) is
// refused whole. track marks the poll in the status as it receives.
func (f *Follower) fetch(ctx context.Context, since uint64, limit int, wait time.Duration, track bool) page {
	pg := page{since: since, limit: limit}
	fail := func(err error) page {
		pg.changes, pg.sizes, pg.skips, pg.cut, pg.err = nil, nil, nil, false, err
		return pg
	}
	u := f.cfg.Primary + "/api/v1/changes?since=" + strconv.FormatUint(since, 10) + "&limit=" + strconv.Itoa(limit)
	if wait > 0 {
		u += "&wait=" + wait.String()
	}
	pctx, cancel := context.WithTimeout(ctx, wait+f.cfg.PageTimeout)
	defer cancel()
	req, err := http.NewRequestWithContext(pctx, http.MethodGet, u, nil)
	if err != nil {
		return fail(err)
	}
	req.Header.Set("Accept", "application/x-ndjson")
	if f.cfg.Token != "" && !f.current.Load() {
		req.Header.Set("Authorization", "Bearer "+f.cfg.Token)
	}
	resp, err := f.client.Do(req)
	if err != nil {
		return fail(err)
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		b, _ := io.ReadAll(io.LimitReader(resp.Body, 512))
		if resp.StatusCode == http.StatusGone {
			return fail(fmt.Errorf("%w: %s", errCompacted, strings.TrimSpace(string(b))))
		}
		if resp.StatusCode == http.StatusConflict {
			return fail(fmt.Errorf("the primary has not reached this replica's position %d (%s): it was replaced or restored; rebuild the replica from an empty store", since, strings.TrimSpace(string(b))))
		}
		return fail(fmt.Errorf("the primary answered %d: %s", resp.StatusCode, strings.TrimSpace(string(b))))
	}
	head, herr := strconv.ParseUint(resp.Header.Get(seqHeader), 10, 64)
	var body io.Reader = resp.Body
	if track {
		body = &receiving{r: body, f: f}
	}
	lr := lineReader{r: bufio.NewReaderSize(body, 64<<10), max: f.maxRecord + linePrefixBytes}
	pg.changes = make([]incidentlib.Change, 0, min(limit, 256))
	for n := 1; ; n++ {
		line, whole, rerr := lr.next()
		tooLarge := errors.Is(rerr, outbound.ErrResponseTooLarge)
		switch {
		case len(line) == 0:
		case whole:
			if err := pg.parse(line); err != nil {
				return fail(fmt.Errorf("change feed after %d, line %d: %w", since, n, err))
			}
		case lr.over || (tooLarge && len(pg.changes) == 0):
			// Too long to read (over the record limit, or larger than a
			// whole answer may be): skipped by its head.
			seq, id, err := changefeed.ParseChangeHead(line)
			if err != nil {
				return fail(fmt.Errorf("change feed after %d, line %d: %w", since, n, err))
			}
			pg.add(incidentlib.Change{Seq: seq, ID: id, Skipped: incidentlib.RuleSize},
				fmt.Sprintf("the record is over %d bytes, the record size limit (--max-record)", f.maxRecord))
		}
		if rerr == io.EOF {
			break
		}
		if tooLarge {
			// The response limit ends the page after its last whole line;
			// the next page starts there.
			pg.cut = true
			break
		}
		if rerr != nil {
			return fail(fmt.Errorf("change feed after %d: reading the page: %w", since, rerr))
		}
	}
	if pg.cut && len(pg.changes) == 0 {
		return fail(fmt.Errorf("change feed after %d: reading the page: %w", since, outbound.ErrResponseTooLarge))
	}
	if len(pg.changes) > limit {
		return fail(fmt.Errorf("change feed after %d: %d changes for a limit of %d", since, len(pg.changes), limit))
	}
	if t := resp.Trailer.Get(seqHeader); t != "" {
		// A long poll's answer: its header went out before the wait.
		head, herr = strconv.ParseUint(t, 10, 64)
	}
	for _, c := range pg.changes {
		if herr != nil {
			return fail(fmt.Errorf("change feed after %d: the page has no valid %s header (the primary's sequence): refused", since, seqHeader))
		}
		if c.Seq > head {
			return fail(fmt.Errorf("change feed after %d: change %d is above the primary's sequence %d (%s) of its own page: the page is refused", since, c.Seq, head, seqHeader))
		}
	}
	pg.head = head
	return pg
}

// errCompacted is the primary's 410 (SEQUENCE_COMPACTED): history after
// the replica's position was compacted away.
var errCompacted = errors.New("the primary compacted the history after this replica's position")

// seqHeader is restapi.SeqHeader.
const seqHeader = "Incidentlib-Seq"

// add appends a change, and a skip when it carries none.
func (pg *page) add(c incidentlib.Change, why string) {
	pg.addSized(c, 0, why)
}

func (pg *page) addSized(c incidentlib.Change, size int, why string) {
	pg.changes = append(pg.changes, c)
	pg.sizes = append(pg.sizes, size)
	if c.Skipped != "" {
		pg.skips = append(pg.skips, skip{seq: c.Seq, id: c.ID, rule: c.Skipped, why: why})
	}
}

// parse reads one whole line of the feed into the page. A record that
// does not decode is skipped.
func (pg *page) parse(line []byte) error {
	c, err := changefeed.ParseChangeLine(line)
	if err != nil {
		seq, id, herr := changefeed.ParseChangeHead(line)
		if herr != nil || !bytes.Contains(line[:min(len(line), 64)], []byte(`,"deleted":false,`)) {
			return err // not a change line: the page is broken
		}
		pg.add(incidentlib.Change{Seq: seq, ID: id, Skipped: incidentlib.RuleStructure}, err.Error())
		return nil
	}
	size := 0
	if c.Incident != nil {
		size = changefeed.ChangeRecordSize(line)
	}
	pg.addSized(c, size, "")
	return nil
}

// validate holds each record of the page to the rules of the store as
// they are now (storage.Incidents.RecordRules: its taxonomy after the primary's
// entries read with the page): one that breaks a rule a replica skips for
// (SkipRule) becomes a Skipped change.
func (pg *page) validate(tax *incidentlib.Taxonomy, maxRecord int) {
	if maxRecord <= 0 {
		maxRecord = incidentlib.DefaultMaxRecordBytes
	}
	for i := range pg.changes {
		c := &pg.changes[i]
		if c.Skipped != "" || c.Incident == nil {
			continue
		}
		verr := c.Incident.ValidateIncoming(tax, maxRecord, pg.sizes[i])
		if rule := incidentlib.SkipRule(verr); rule != "" {
			*c = incidentlib.Change{Seq: c.Seq, ID: c.ID, Skipped: rule}
			pg.skips = append(pg.skips, skip{seq: c.Seq, id: c.ID, rule: rule, why: incidentlib.ErrorMessage(verr)})
		}
	}
}

// lineReader reads the lines of a feed page, each at most max bytes: the
// rest of a longer line is read past, not kept.
type lineReader struct {
	r    *bufio.Reader
	max  int
	over bool // the last line was longer than max
}

// next returns the next line without its newline; whole is false when the
// line was longer than max (line is then its first max bytes) or the
// answer ended inside it (err is then set).
func (l *lineReader) next() (line []byte, whole bool, err error) {
	l.over = false
	var buf []byte
	for {
		frag, err := l.r.ReadSlice('\n')
		if !l.over {
			if len(buf)+len(frag) > l.max {
				buf = append(buf, frag[:l.max-len(buf)]...)
				l.over = true
			} else {
				buf = append(buf, frag...)
			}
		}
		switch {
		case err == bufio.ErrBufferFull:
			continue
		case err == nil:
			if l.over {
				return buf, false, nil
			}
			return bytes.TrimSpace(buf), true, nil
		case err == io.EOF && !l.over:
			// The last line may go without a newline.
			return bytes.TrimSpace(buf), true, io.EOF
		default:
			return buf, false, err
		}
	}
}

// receiving marks the poll in flight as receiving once the primary's
// answer carries a byte of body: a change is on its way.
type receiving struct {
	r    io.Reader
	f    *Follower
	seen bool
}

func (r *receiving) Read(p []byte) (int, error) {
	n, err := r.r.Read(p)
	if n > 0 && !r.seen {
		r.seen = true
		r.f.update(func(s *Status) { s.Receiving = true })
	}
	return n, err
}
