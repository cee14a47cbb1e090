// Package replica makes a store a read replica of a primary library: it
// bootstraps from the primary's change feed (GET /api/v1/changes), then
// follows it with long polls (or short polls at a bounded interval),
// applying each page in one transaction together with the position it
// reached, so that a replica stopped at any moment resumes exactly where
// its data ends. Every request goes through the one outbound client
// (pooled keep-alive connections, retries, circuit breaker): a replica
// that copies 100,000 incidents opens a handful of TCP connections.
package replica

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"net/url"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/incidentlib/incidentlib"
	"github.com/incidentlib/incidentlib/outbound"
)

// Store is what a follower needs of the replica's store: applying the
// primary's changes, and counting its incidents to refuse a store that
// holds incidents of its own. storage.DB implements it.
type Store interface {
	incidentlib.ChangeApplier
	// CountIncidents is incidentlib.IncidentService.CountIncidents.
	CountIncidents(ctx context.Context, filter incidentlib.IncidentFilter) (int, error)
	// Path names the store in messages.
	Path() string
}

// Feed limits, as the primary's API enforces them (restapi.MaxFeedLimit,
// restapi.MaxFeedWait).
const (
	MaxPageSize = 1000
	MaxWait     = 60 * time.Second
	MaxInterval = 10 * time.Minute
)

// Config configures a Follower.
type Config struct {
	// Primary is the base URL of the primary library, such as
	// http://primary:8080. Required.
	Primary string
	// Interval is the shortest time between the starts of two polls that
	// found nothing new: the period of short polling, and the floor under
	// a primary that answers long polls at once. Unit: duration. Default
	// 1s; more than 0, at most MaxInterval.
	Interval time.Duration
	// Wait is how long the primary holds a poll that finds nothing (long
	// poll): a change is applied as soon as it is committed. 0 turns long
	// polling off (short polling every Interval). Unit: duration. Default
	// 25s; at most MaxWait.
	Wait time.Duration
	// PageSize is how many changes one request asks for and one
	// transaction applies. A page larger than the outbound client's
	// MaxResponseBytes is asked for again in halves. Unit: changes.
	// Default and maximum MaxPageSize.
	PageSize int
	// PageTimeout bounds reading one page, on top of Wait. Unit: duration.
	// Default 60s.
	PageTimeout time.Duration
	// MaxLineBytes bounds one line (one record) of the feed. Unit: bytes.
	// Default 16 MiB.
	MaxLineBytes int
	// Logger receives progress and errors; default slog.Default().
	Logger *slog.Logger
}

// DefaultConfig returns the defaults documented on Config.
func DefaultConfig(primary string) Config {
	return Config{
		Primary: primary, Interval: time.Second, Wait: 25 * time.Second,
		PageSize: MaxPageSize, PageTimeout: 60 * time.Second, MaxLineBytes: 16 << 20,
	}
}

// ParsePrimary checks a primary's (or upstream library's) base URL: an
// absolute http(s) URL without query or fragment. It returns the URL
// without a trailing slash.
func ParsePrimary(s string) (string, error) {
	u, err := url.Parse(s)
	if err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" || u.RawQuery != "" || u.Fragment != "" || u.User != nil {
		return "", fmt.Errorf("%q is not the base URL of a library such as http://primary:8080", s)
	}
	return strings.TrimRight(u.String(), "/"), nil
}

func (c *Config) validate() error {
	var errs []error
	p, err := ParsePrimary(c.Primary)
	if err != nil {
		errs = append(errs, err)
	}
	c.Primary = p
	if c.Interval <= 0 || c.Interval > MaxInterval {
		errs = append(errs, fmt.Errorf("follow interval must be a duration above 0 and at most %s, got %s", MaxInterval, c.Interval))
	}
	if c.Wait < 0 || c.Wait > MaxWait {
		errs = append(errs, fmt.Errorf("follow wait must be a duration from 0s to %s, got %s", MaxWait, c.Wait))
	}
	if c.PageSize < 1 || c.PageSize > MaxPageSize {
		errs = append(errs, fmt.Errorf("follow page size must be 1 to %d changes, got %d", MaxPageSize, c.PageSize))
	}
	if c.PageTimeout <= 0 {
		errs = append(errs, fmt.Errorf("follow page timeout must be a positive duration, got %s", c.PageTimeout))
	}
	if c.MaxLineBytes < 1<<10 {
		errs = append(errs, fmt.Errorf("follow line limit must be at least 1KiB, got %d bytes", c.MaxLineBytes))
	}
	if c.Logger == nil {
		c.Logger = slog.Default()
	}
	return errors.Join(errs...)
}

// Status is where a follower stands.
type Status struct {
	// Seq is the primary's sequence up to which changes are applied.
	Seq uint64
	// PrimarySeq is the primary's sequence as last seen.
	PrimarySeq uint64
	// Level reports that the last poll found nothing more to apply.
	Level bool
	// LevelAt is when the replica was last known level with the primary
	// (the follower's start if never).
	LevelAt time.Time
	// Applied counts the changes applied since the follower started.
	Applied uint64
	// Requests counts the feed requests made, failed ones included.
	Requests uint64
	// LastError is the error of the last poll, "" if it succeeded.
	LastError string
}

// Follower copies a primary's changes into a store.
type Follower struct {
	db     Store
	client *outbound.Client
	cfg    Config

	mu      sync.Mutex
	status  Status
	changed chan struct{} // closed and replaced at every status change
	page    int           // current page size (halved on oversized pages)

	// ahead delivers the next page, fetched while the current one is
	// applied; used by Run's goroutine only.
	ahead   chan page
	aheadWG sync.WaitGroup

	errors prometheus.Counter
}

// ErrNotReplica is returned by New for a store that holds incidents of its
// own: a replica starts from an empty store or from its own earlier one.
var ErrNotReplica = errors.New("the store holds incidents that did not come from a primary")

// New makes a follower of cfg.Primary over db. db must be empty or a
// store this replica followed before (it then resumes from its saved
// position). reg, if not nil, receives the follower's metrics:
// incidentlib_follow_seq, incidentlib_follow_primary_seq,
// incidentlib_follow_lag_seconds and incidentlib_follow_errors_total.
func New(ctx context.Context, db Store, client *outbound.Client, cfg Config, reg prometheus.Registerer) (*Follower, error) {
	if err := cfg.validate(); err != nil {
		return nil, err
	}
	if client == nil {
		return nil, errors.New("replica: an outbound client is required")
	}
	seq, following, err := db.AppliedSeq(ctx)
	if err != nil {
		return nil, err
	}
	if !following {
		n, err := db.CountIncidents(ctx, incidentlib.IncidentFilter{})
		if err != nil {
			return nil, err
		}
		if n > 0 {
			return nil, fmt.Errorf("%w: %s holds %d incidents; a replica needs an empty store or its own earlier one", ErrNotReplica, db.Path(), n)
		}
	}
	f := &Follower{db: db, client: client, cfg: cfg, changed: make(chan struct{}), page: cfg.PageSize}
	f.status = Status{Seq: seq, PrimarySeq: seq, LevelAt: time.Now()}
	f.errors = prometheus.NewCounter(prometheus.CounterOpts{
		Name: "incidentlib_follow_errors_total",
		Help: "Polls of the primary's change feed that failed (the follower retries with backoff).",
	})
	if reg != nil {
		gauge := func(name, help string, v func(Status) float64) prometheus.Collector {
			return prometheus.NewGaugeFunc(prometheus.GaugeOpts{Name: name, Help: help}, func() float64 { return v(f.Status()) })
		}
		for _, c := range []prometheus.Collector{
			f.errors,
			gauge("incidentlib_follow_seq", "The primary's change sequence up to which this replica has applied its changes.",
				func(s Status) float64 { return float64(s.Seq) }),
			gauge("incidentlib_follow_primary_seq", "The primary's change sequence as last seen by this replica.",
				func(s Status) float64 { return float64(s.PrimarySeq) }),
			gauge("incidentlib_follow_lag_seconds", "0 while the replica's last poll found it level with its primary; else the seconds since it last was (it is catching up or cannot reach the primary).",
				func(s Status) float64 { return lag(s, time.Now()) }),
		} {
			if err := reg.Register(c); err != nil {
				return nil, err
			}
		}
	}
	return f, nil
}

func lag(s Status, now time.Time) float64 {
	if s.Level {
		return 0
	}
	return now.Sub(s.LevelAt).Seconds()
}

// Primary is the primary's base URL.
func (f *Follower) Primary() string { return f.cfg.Primary }

// Status returns where the follower stands.
func (f *Follower) Status() Status {
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.status
}

func (f *Follower) update(fn func(*Status)) {
	f.mu.Lock()
	fn(&f.status)
	close(f.changed)
	f.changed = make(chan struct{})
	f.mu.Unlock()
}

// WaitSeq waits until the follower has applied the primary's changes up
// to seq, or ctx ends.
func (f *Follower) WaitSeq(ctx context.Context, seq uint64) error {
	return f.wait(ctx, func(s *Status) bool { return s.Seq >= seq })
}

// WaitLevel waits until a poll found the replica level with its primary
// (the first time: the bootstrap is done), or ctx ends.
func (f *Follower) WaitLevel(ctx context.Context) error {
	return f.wait(ctx, func(s *Status) bool { return s.Level })
}

// wait waits until done holds for the status, or ctx ends.
func (f *Follower) wait(ctx context.Context, done func(*Status) bool) error {
	for {
		f.mu.Lock()
		ok, ch := done(&f.status), f.changed
		f.mu.Unlock()
		if ok {
			return nil
		}
		select {
		case <-ch:
		case <-ctx.Done():
			return ctx.Err()
		}
	}
}

// Run follows the primary until ctx ends, then returns nil. Failed polls
// are retried after the outbound client's backoff (exponential, full
// jitter, capped); errors are logged, at most once per 30s when repeated.
func (f *Follower) Run(ctx context.Context) error {
	log := f.cfg.Logger.With("primary", f.cfg.Primary)
	st := f.Status()
	log.Info("following the primary", "seq", st.Seq)
	start := time.Now()
	caughtUp := false
	failures := 0
	var lastMsg string
	var lastLog time.Time
	for ctx.Err() == nil {
		began := time.Now()
		wait := time.Duration(0)
		if f.Status().Level {
			wait = f.cfg.Wait
		}
		n, err := f.poll(ctx, wait)
		if err != nil {
			if ctx.Err() != nil {
				break
			}
			f.errors.Inc()
			if msg := err.Error(); msg != lastMsg || time.Since(lastLog) > 30*time.Second {
				log.Error("following the primary failed; retrying", "err", err, "seq", f.Status().Seq)
				lastMsg, lastLog = msg, time.Now()
			}
			sleep(ctx, f.client.Backoff(min(failures, 16)))
			failures++
			continue
		}
		failures, lastMsg = 0, ""
		st := f.Status()
		if st.Level && !caughtUp {
			caughtUp = true
			log.Info("level with the primary", "seq", st.Seq, "applied", st.Applied, "took", time.Since(start).String())
		}
		if n == 0 {
			sleep(ctx, time.Until(began.Add(f.cfg.Interval)))
		}
	}
	f.aheadWG.Wait() // a page fetched ahead ends with ctx
	f.ahead = nil
	log.Info("stopped following the primary", "seq", f.Status().Seq)
	return nil
}

func sleep(ctx context.Context, d time.Duration) {
	if d <= 0 {
		return
	}
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-t.C:
	case <-ctx.Done():
	}
}

// page is one page of the feed as fetched.
type page struct {
	since   uint64
	limit   int
	changes []incidentlib.Change
	head    uint64
	err     error
}

// poll reads the page of the feed after the saved position, waiting up to
// wait for a change, and applies it in one transaction. It returns how
// many changes it applied. While the replica catches up, the next page is
// fetched (and parsed) while this one is applied: ApplyChanges refuses a
// page that does not follow on, so a page fetched ahead is used only if
// the position is the one it was asked for.
func (f *Follower) poll(ctx context.Context, wait time.Duration) (int, error) {
	from, _, err := f.db.AppliedSeq(ctx)
	if err != nil {
		return 0, err
	}
	f.mu.Lock()
	limit := f.page
	f.mu.Unlock()
	var pg page
	if f.ahead != nil {
		pg = <-f.ahead
		f.ahead = nil
	}
	if pg.limit == 0 || pg.since != from || pg.limit != limit {
		pg = page{since: from, limit: limit}
		pg.changes, pg.head, pg.err = f.fetch(ctx, from, limit, wait)
	}
	changes, head, err := pg.changes, pg.head, pg.err
	f.update(func(s *Status) {
		s.Requests++
		if err != nil {
			s.Level, s.LastError = false, err.Error()
		}
	})
	if errors.Is(err, outbound.ErrResponseTooLarge) && limit > 1 {
		f.mu.Lock()
		f.page = max(1, limit/2)
		f.mu.Unlock()
		f.cfg.Logger.Warn("a page of the change feed is larger than the response limit; asking for smaller pages", "page", max(1, limit/2))
	}
	if err != nil {
		return 0, err
	}
	if len(changes) == limit {
		next := changes[len(changes)-1].Seq
		f.ahead = make(chan page, 1)
		f.aheadWG.Add(1)
		go func(ch chan<- page) {
			defer f.aheadWG.Done()
			p := page{since: next, limit: limit}
			p.changes, p.head, p.err = f.fetch(ctx, next, limit, 0)
			ch <- p
		}(f.ahead)
	}
	to, err := f.db.ApplyChanges(ctx, from, changes)
	if err != nil {
		f.update(func(s *Status) { s.Level, s.LastError = false, err.Error() })
		return 0, fmt.Errorf("apply changes %d..%d: %w", from, to, err)
	}
	level := len(changes) < limit
	f.update(func(s *Status) {
		s.Seq = to
		s.PrimarySeq = max(head, to)
		s.Applied += uint64(len(changes))
		s.LastError = ""
		s.Level = level
		if level {
			s.LevelAt = time.Now()
		}
	})
	if level && limit < f.cfg.PageSize {
		f.mu.Lock()
		f.page = f.cfg.PageSize // back to full pages once a small one went through
		f.mu.Unlock()
	}
	return len(changes), nil
}

// fetch reads one page of the feed. A page is returned only if it was read
// to its end: a connection cut mid-body is an error, never a short page.
func (f *Follower) fetch(ctx context.Context, since uint64, limit int, wait time.Duration) ([]incidentlib.Change, uint64, error) {
	u := f.cfg.Primary + "/api/v1/changes?since=" + strconv.FormatUint(since, 10) + "&limit=" + strconv.Itoa(limit)
	if wait > 0 {
		u += "&wait=" + wait.String()
	}
	pctx, cancel := context.WithTimeout(ctx, wait+f.cfg.PageTimeout)
	defer cancel()
	req, err := http.NewRequestWithContext(pctx, http.MethodGet, u, nil)
	if err != nil {
		return nil, 0, err
	}
	req.Header.Set("Accept", "application/x-ndjson")
	resp, err := f.client.Do(req)
	if err != nil {
		return nil, 0, err
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		b, _ := io.ReadAll(io.LimitReader(resp.Body, 512))
		if resp.StatusCode == http.StatusConflict {
			return nil, 0, fmt.Errorf("the primary has not reached this replica's position %d (%s): it was replaced or restored; rebuild the replica from an empty store", since, strings.TrimSpace(string(b)))
		}
		return nil, 0, fmt.Errorf("the primary answered %d: %s", resp.StatusCode, strings.TrimSpace(string(b)))
	}
	head, _ := strconv.ParseUint(resp.Header.Get("Incidentlib-Seq"), 10, 64)
	sc := bufio.NewScanner(resp.Body)
	sc.Buffer(make([]byte, 0, 64<<10), f.cfg.MaxLineBytes)
	changes := make([]incidentlib.Change, 0, min(limit, 256))
	for sc.Scan() {
		if len(sc.Bytes()) == 0 {
			continue
		}
		c, err := incidentlib.ParseChangeLine(sc.Bytes())
		if err != nil {
			// A read error hands the scanner's partial last line over as
			// a token: report the read error, not the broken line.
			for sc.Scan() {
			}
			if rerr := sc.Err(); rerr != nil {
				return nil, 0, fmt.Errorf("change feed after %d: reading the page: %w", since, rerr)
			}
			return nil, 0, fmt.Errorf("change feed after %d, line %d: %w", since, len(changes)+1, err)
		}
		changes = append(changes, c)
	}
	if err := sc.Err(); err != nil {
		return nil, 0, fmt.Errorf("change feed after %d: reading the page: %w", since, err)
	}
	if len(changes) > limit {
		return nil, 0, fmt.Errorf("change feed after %d: %d changes for a limit of %d", since, len(changes), limit)
	}
	return changes, head, nil
}
