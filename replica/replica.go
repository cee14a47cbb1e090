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
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net/url"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/incidentlib/incidentlib"
	"github.com/incidentlib/incidentlib/outbound"
)

// Store is what a follower needs of the replica's store: applying the
// primary's changes, and counting its incidents to refuse a store that
// holds incidents of its own. storage.Follower implements it.
type Store interface {
	incidentlib.ChangeApplier
	TaxonomyStore
	// CountIncidents is incidentlib.IncidentService.CountIncidents.
	CountIncidents(ctx context.Context, filter incidentlib.IncidentFilter) (int, error)
	// Path names the store in messages.
	Path() string
	// RecordRules returns the taxonomy and the record size limit in bytes
	// the store holds records to: the follower validates each page of the
	// primary's records with them as they are when the page is applied,
	// after the primary's taxonomy entries (incidentlib.Incident.
	// ValidateIncoming), and skips those that break a rule a replica skips
	// for, a line over the limit without reading it into memory.
	RecordRules() (tax *incidentlib.Taxonomy, maxRecordBytes int)
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
	// MaxResponseBytes ends after its last whole line, and the next page
	// starts there. Unit: changes.
	// Default and maximum MaxPageSize.
	PageSize int
	// PageTimeout bounds reading one page, on top of Wait. Unit: duration.
	// Default 60s.
	PageTimeout time.Duration
	// Token, if set, is an admin token of the primary: the follower then
	// reads the history feed (every version with its author) and the
	// replica holds the same history as its primary. Without it the
	// replica copies current records only.
	Token string
	// Now is the follower's clock, for its lag (Lag); default time.Now.
	Now func() time.Time
	// Logger receives progress and errors; default slog.Default().
	Logger *slog.Logger
}

// DefaultConfig returns the defaults documented on Config.
func DefaultConfig(primary string) Config {
	return Config{
		Primary: primary, Interval: time.Second, Wait: 25 * time.Second,
		PageSize: MaxPageSize, PageTimeout: 60 * time.Second,
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
	if c.Now == nil {
		c.Now = time.Now
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
	// (the follower's start if never), by Config.Now.
	LevelAt time.Time
	// PollingSince is when the poll in flight started (zero between
	// polls), PollWait how long it asked the primary to hold it, and
	// Receiving that the primary has begun to answer it with changes.
	PollingSince time.Time
	PollWait     time.Duration
	Receiving    bool
	// Skipped counts the changes whose records were skipped since the
	// follower started (SkipRule).
	Skipped uint64
	// Applied counts the changes applied since the follower started.
	Applied uint64
	// TaxonomyEntry is the number of the last entry of the primary's
	// taxonomy history applied or refused; TaxonomyApplied and
	// TaxonomySkipped count those applied and refused since the follower
	// started.
	TaxonomyEntry   uint64
	TaxonomyApplied uint64
	TaxonomySkipped uint64
	// Requests counts the feed requests made, failed ones included.
	Requests uint64
	// LastError is the error of the last poll, "" if it succeeded.
	LastError string
}

// Follower copies a primary's changes into a store.
type Follower struct {
	db        Store
	tdb       TaxonomyStore // db
	client    *outbound.Client
	cfg       Config
	maxRecord int // the store's record size limit: the longest line read whole

	mu      sync.Mutex
	status  Status
	changed chan struct{} // closed and replaced at every status change

	// ahead delivers the next page, fetched while the current one is
	// applied; used by Run's goroutine only.
	ahead   chan page
	aheadWG sync.WaitGroup

	errors     prometheus.Counter
	skipped    *prometheus.CounterVec
	taxSkipped *prometheus.CounterVec

	// noTaxonomyFeed is set once the primary answered 404 for its
	// taxonomy feed (an older release).
	noTaxonomyFeed atomic.Bool
	// taxHead is the primary's sequence of the last page before which the
	// taxonomy entries were read (taxRead: they were): a page with the
	// same sequence was read with nothing committed since, so there is no
	// new entry to read. Used by Run's goroutine only.
	taxHead uint64
	taxRead bool

	// current is set after the primary answered 410: the history after
	// the position was compacted away, so the follower reads the feed of
	// current records (a snapshot of every incident changed since) until
	// it is level, then the history feed again from there.
	current atomic.Bool
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
	taxAt, err := db.AppliedTaxonomy(ctx)
	if err != nil {
		return nil, err
	}
	f := &Follower{db: db, tdb: db, client: client, cfg: cfg, changed: make(chan struct{})}
	_, f.maxRecord = db.RecordRules()
	if f.maxRecord <= 0 {
		f.maxRecord = incidentlib.DefaultMaxRecordBytes
	}
	f.status = Status{Seq: seq, PrimarySeq: seq, LevelAt: cfg.Now(), TaxonomyEntry: taxAt}
	f.errors = prometheus.NewCounter(prometheus.CounterOpts{
		Name: "incidentlib_follow_errors_total",
		Help: "Polls of the primary's change feed that failed, pages refused included (the follower retries with backoff).",
	})
	f.skipped = prometheus.NewCounterVec(prometheus.CounterOpts{
		Name: "incidentlib_follow_records_skipped_total",
		Help: "Changes of the primary whose records this replica skipped, by the rule they break (size, url_scheme, structure); each is logged with its id at WARN.",
	}, []string{"reason"})
	f.taxSkipped = prometheus.NewCounterVec(prometheus.CounterOpts{
		Name: "incidentlib_follow_taxonomy_skipped_total",
		Help: "Entries of the primary's taxonomy history this replica refused, by the rule they break (size, structure); each is logged with its number and subject at WARN.",
	}, []string{"reason"})
	for _, r := range incidentlib.SkipRules {
		f.skipped.WithLabelValues(string(r))
	}
	for _, r := range []incidentlib.Rule{incidentlib.RuleSize, incidentlib.RuleStructure} {
		f.taxSkipped.WithLabelValues(string(r))
	}
	if reg != nil {
		gauge := func(name, help string, v func(Status) float64) prometheus.Collector {
			return prometheus.NewGaugeFunc(prometheus.GaugeOpts{Name: name, Help: help}, func() float64 { return v(f.Status()) })
		}
		for _, c := range []prometheus.Collector{
			f.errors, f.skipped, f.taxSkipped,
			gauge("incidentlib_follow_seq", "The primary's change sequence up to which this replica has applied its changes.",
				func(s Status) float64 { return float64(s.Seq) }),
			gauge("incidentlib_follow_primary_seq", "The primary's change sequence as last seen by this replica.",
				func(s Status) float64 { return float64(s.PrimarySeq) }),
			gauge("incidentlib_follow_lag_seconds", "Seconds since the replica was last known level with its primary: 0 while it is (its last poll found nothing more, and a poll in flight is within the wait it asked for and has received no change); else it is catching up, is stuck in a poll or cannot reach the primary.",
				func(s Status) float64 { return Lag(s, f.cfg.Now()) }),
		} {
			if err := reg.Register(c); err != nil {
				return nil, err
			}
		}
	}
	return f, nil
}

// Lag is how far, in seconds at now, the replica of status s is behind
// its primary: the time since it was last known level (Status.LevelAt).
// It is 0 while it is level: its last poll found nothing more to apply,
// and the poll in flight, if any, has received no change and is within the
// wait it asked the primary for (a poll that started level and was not
// answered counts only the time past its wait). A poll stuck on a primary
// that trickles its answer counts all its time.
func Lag(s Status, now time.Time) float64 {
	switch {
	case !s.PollingSince.IsZero() && s.Level && !s.Receiving:
		return max(0, now.Sub(s.PollingSince.Add(s.PollWait)).Seconds())
	case s.Level && s.PollingSince.IsZero():
		return 0
	}
	return max(0, now.Sub(s.LevelAt).Seconds())
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

// poll reads the page of the feed after the saved position, waiting up to
// wait for a change, then the primary's taxonomy entries (followTaxonomy),
// and applies the entries, then the page in one transaction. It returns how
// many changes it applied. While the replica catches up, the next page is
// fetched (and parsed) while this one is applied: ApplyChanges refuses a
// page that does not follow on, so a page fetched ahead is used only if
// the position is the one it was asked for.
func (f *Follower) poll(ctx context.Context, wait time.Duration) (int, error) {
	from, _, err := f.db.AppliedSeq(ctx)
	if err != nil {
		return 0, err
	}
	limit := f.cfg.PageSize
	var pg page
	if f.ahead != nil {
		pg = <-f.ahead
		f.ahead = nil
	}
	if pg.limit == 0 || pg.since != from || pg.limit != limit {
		f.update(func(s *Status) { s.PollingSince, s.PollWait, s.Receiving = f.cfg.Now(), wait, false })
		pg = f.fetch(ctx, from, limit, wait, true)
	}
	changes, head, err := pg.changes, pg.head, pg.err
	f.update(func(s *Status) {
		s.Requests++
		s.PollingSince, s.Receiving = time.Time{}, false
		if err != nil {
			s.Level, s.LastError = false, err.Error()
		}
	})
	if err != nil {
		if errors.Is(err, errCompacted) && !f.current.Swap(true) {
			f.cfg.Logger.Warn("the primary compacted its history after this replica's position: catching up from its current records, then following its history again", "seq", from)
		}
		return 0, err
	}
	// The primary's taxonomy entries, read after the page: every change of
	// the taxonomy committed before the page was read is among them. The
	// page's records are then held to the taxonomy they make.
	if !f.taxRead || head != f.taxHead {
		f.taxRead = false
		if _, err := f.followTaxonomy(ctx); err != nil {
			f.update(func(s *Status) { s.Level, s.LastError = false, err.Error() })
			return 0, err
		}
		f.taxHead, f.taxRead = head, true
	}
	pg.validate(f.db.RecordRules())
	if len(changes) == limit || pg.cut {
		next := changes[len(changes)-1].Seq
		f.ahead = make(chan page, 1)
		f.aheadWG.Add(1)
		go func(ch chan<- page) {
			defer f.aheadWG.Done()
			ch <- f.fetch(ctx, next, limit, 0, false)
		}(f.ahead)
	}
	to, err := f.db.ApplyChanges(ctx, from, changes)
	if err != nil {
		f.update(func(s *Status) { s.Level, s.LastError = false, err.Error() })
		return 0, fmt.Errorf("apply changes %d..%d: %w", from, to, err)
	}
	report(f.cfg.Logger, f.skipped, pg.skips, "skipped a change of the primary: its record breaks the rules records are held to", "seq", "id")
	level := len(changes) < limit && !pg.cut
	if level && head > to {
		// The page holds every change up to head, and the changes after
		// its last are the taxonomy's, applied above: the position is head.
		if to, err = f.db.AdvanceAppliedSeq(ctx, to, head); err != nil {
			f.update(func(s *Status) { s.Level, s.LastError = false, err.Error() })
			return 0, fmt.Errorf("advance to the primary's sequence %d: %w", head, err)
		}
	}
	if level && f.current.Swap(false) {
		f.cfg.Logger.Info("caught up from the primary's current records; following its history again", "seq", to)
	}
	f.update(func(s *Status) {
		s.Seq = to
		s.PrimarySeq = max(head, to)
		s.Applied += uint64(len(changes) - len(pg.skips))
		s.Skipped += uint64(len(pg.skips))
		s.LastError = ""
		s.Level = level
		if level {
			s.LevelAt = f.cfg.Now()
		}
	})
	return len(changes), nil
}
