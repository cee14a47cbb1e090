// Package upstream reads incidents from another library (serve
// --upstream) over the outbound client: a RemoteIncidentReader, and its
// composition behind the local store (LocalFirst).
package upstream

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"net/url"
	"strings"
	"time"

	"github.com/hashicorp/golang-lru/v2/expirable"
	"github.com/prometheus/client_golang/prometheus"

	"github.com/incidentlib/incidentlib"
	"github.com/incidentlib/incidentlib/iljson"
	"github.com/incidentlib/incidentlib/outbound"
)

// A library can link to incidents of another library (serve --upstream
// URL): ids that are not in the local store, in incident(id:), node,
// related and recurrenceOf, are read from the upstream's
// GET /api/v1/incidents?ids=... (LocalFirst, behind the GraphQL
// resolvers' Incidents loader), so one GraphQL request makes at most one
// upstream call per level of the query (one per MaxIDs missing ids). Answers, "not there" included, are
// cached for a bounded time and number of incidents. When the upstream
// fails, is too slow or its circuit breaker is open, the local data is
// served all the same: the missing incidents are null (or left out of a
// list) and the response carries one error with code UPSTREAM_UNAVAILABLE.

// MaxIDs is the most ids one upstream call asks for (the REST
// API's MaxIDsPerRequest).
const MaxIDs = 500

// Config configures a Reader.
type Config struct {
	// URL is the upstream library's base URL, such as http://library:8080.
	URL string
	// CacheTTL is how long an upstream answer is kept. Unit: duration.
	// Default 5m; must be positive.
	CacheTTL time.Duration
	// CacheSize is how many upstream answers (incidents, or the fact that
	// an id is not there) are kept. Unit: incidents. Default 10,000; must
	// be positive.
	CacheSize int
	// Timeout bounds one upstream call, and never takes more than three
	// quarters of what is left of the request's own deadline, so that the
	// local part of the answer is never lost to a slow upstream.
	// Unit: duration. Default 2s; must be positive.
	Timeout time.Duration
	// Taxonomy and MaxRecordBytes are the rules the upstream's records are
	// held to, those of the local store (storage.Incidents.RecordRules): each
	// record goes through incidentlib.Incident.ValidateIncoming, and one
	// that breaks a rule a reader skips for (incidentlib.SkipRule) is
	// left out, as if the upstream did not have it. A nil Taxonomy skips
	// the terms check; MaxRecordBytes in bytes, 0 for
	// incidentlib.DefaultMaxRecordBytes.
	Taxonomy       *incidentlib.Taxonomy
	MaxRecordBytes int
	// Rules, if set, gives the rules as they are at each read, in place
	// of Taxonomy and MaxRecordBytes: the store's taxonomy changes while
	// it runs (admins add terms; a replica takes its primary's), and a
	// copy taken at start-up would leave out the upstream's records that
	// use a term added since. storage.Incidents.RecordRules.
	Rules func() (tax *incidentlib.Taxonomy, maxRecordBytes int)
	// Logger receives a WARN line, with the id, per record left out;
	// default slog.Default().
	Logger *slog.Logger
}

// DefaultConfig returns the defaults documented on Config.
func DefaultConfig(u string) Config {
	return Config{URL: u, CacheTTL: 5 * time.Minute, CacheSize: 10_000, Timeout: 2 * time.Second}
}

// Reader reads incidents from an upstream library. It is a
// RemoteIncidentReader.
type Reader struct {
	cfg     Config
	client  *outbound.Client
	cache   *expirable.LRU[string, *incidentlib.Incident]
	lookups *prometheus.CounterVec
	skipped *prometheus.CounterVec
}

// Lookup results, the values of the result label of
// incidentlib_upstream_lookups_total.
const (
	CacheHit    = "cache_hit"
	Fetched     = "fetched"
	NotFound    = "not_found"
	Unavailable = "unavailable"
)

// New checks cfg and builds the upstream reader over the outbound
// client. reg, if not nil, receives incidentlib_upstream_lookups_total.
func New(cfg Config, client *outbound.Client, reg prometheus.Registerer) (*Reader, error) {
	var errs []error
	u, err := url.Parse(cfg.URL)
	if err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" || u.RawQuery != "" || u.Fragment != "" {
		errs = append(errs, fmt.Errorf("upstream %q is not the base URL of a library such as http://library:8080", cfg.URL))
	}
	cfg.URL = strings.TrimRight(cfg.URL, "/")
	if cfg.CacheTTL <= 0 {
		errs = append(errs, fmt.Errorf("upstream cache TTL must be a positive duration, got %s", cfg.CacheTTL))
	}
	if cfg.CacheSize <= 0 {
		errs = append(errs, fmt.Errorf("upstream cache size must be a positive number of incidents, got %d", cfg.CacheSize))
	}
	if cfg.Timeout <= 0 {
		errs = append(errs, fmt.Errorf("upstream timeout must be a positive duration, got %s", cfg.Timeout))
	}
	if client == nil {
		errs = append(errs, errors.New("upstream: an outbound client is required"))
	}
	if cfg.MaxRecordBytes < 0 {
		errs = append(errs, fmt.Errorf("upstream record size limit must not be negative, got %d bytes", cfg.MaxRecordBytes))
	}
	if cfg.Logger == nil {
		cfg.Logger = slog.Default()
	}
	if err := errors.Join(errs...); err != nil {
		return nil, err
	}
	up := &Reader{
		cfg:    cfg,
		client: client,
		cache:  expirable.NewLRU[string, *incidentlib.Incident](cfg.CacheSize, nil, cfg.CacheTTL),
		lookups: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "incidentlib_upstream_lookups_total",
			Help: "Incidents looked up in the upstream library, by result (cache_hit, fetched, not_found, unavailable).",
		}, []string{"result"}),
	}
	up.skipped = prometheus.NewCounterVec(prometheus.CounterOpts{
		Name: "incidentlib_upstream_records_skipped_total",
		Help: "Records of the upstream library left out because they break the rules records are held to, by rule (size, url_scheme, structure); each is logged with its id at WARN.",
	}, []string{"reason"})
	for _, r := range []string{CacheHit, Fetched, NotFound, Unavailable} {
		up.lookups.WithLabelValues(r)
	}
	for _, r := range incidentlib.SkipRules {
		up.skipped.WithLabelValues(string(r))
	}
	if reg != nil {
		for _, c := range []prometheus.Collector{up.lookups, up.skipped} {
			if err := reg.Register(c); err != nil {
				return nil, err
			}
		}
	}
	return up, nil
}

var _ incidentlib.RemoteIncidentReader = (*Reader)(nil)

// URL is the upstream's base URL.
func (u *Reader) URL() string { return u.cfg.URL }

// FetchIncidents returns the upstream's records of ids in the order of ids, nil
// where the upstream does not have one. Cached answers are used; the rest
// is asked for in one call per MaxIDs ids. On failure it returns
// EUPSTREAMUNAVAILABLE and no records.
func (u *Reader) FetchIncidents(ctx context.Context, ids []string) ([]*incidentlib.Incident, error) {
	out := make([]*incidentlib.Incident, len(ids))
	var ask []string
	asked := map[string]bool{}
	for i, id := range ids {
		if inc, ok := u.cache.Get(id); ok {
			out[i] = inc
			u.lookups.WithLabelValues(CacheHit).Inc()
		} else if !asked[id] {
			asked[id] = true
			ask = append(ask, id)
		}
	}
	if len(ask) == 0 {
		return out, nil
	}
	got := make(map[string]*incidentlib.Incident, len(ask))
	for start := 0; start < len(ask); start += MaxIDs {
		chunk := ask[start:min(start+MaxIDs, len(ask))]
		if err := u.call(ctx, chunk, got); err != nil {
			u.lookups.WithLabelValues(Unavailable).Add(float64(len(ask) - start))
			return nil, &incidentlib.Error{Code: incidentlib.EUPSTREAMUNAVAILABLE,
				Message: fmt.Sprintf("the upstream library is unavailable: %d linked incidents could not be read (%s)", len(ask), headIDs(ask))}
		}
	}
	for _, id := range ask {
		inc := got[id]
		u.cache.Add(id, inc) // nil: the upstream does not have it
		if inc != nil {
			u.lookups.WithLabelValues(Fetched).Inc()
		} else {
			u.lookups.WithLabelValues(NotFound).Inc()
		}
	}
	for i, id := range ids {
		if inc, ok := got[id]; ok || asked[id] {
			out[i] = inc
		}
	}
	return out, nil
}

// call asks the upstream for ids, within the call's time budget. An
// answer over the outbound client's response limit is asked for again in
// halves; one record alone over it is left out (RuleSize).
func (u *Reader) call(ctx context.Context, ids []string, got map[string]*incidentlib.Incident) error {
	timeout := u.cfg.Timeout
	if dl, ok := ctx.Deadline(); ok {
		timeout = min(timeout, time.Until(dl)*3/4)
	}
	if timeout <= 0 {
		return context.DeadlineExceeded
	}
	cctx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()
	return u.ask(cctx, ids, got)
}

func (u *Reader) ask(ctx context.Context, ids []string, got map[string]*incidentlib.Incident) error {
	var recs []json.RawMessage
	err := u.client.GetJSON(ctx, u.cfg.URL+"/api/v1/incidents?ids="+strings.Join(ids, ","), &recs)
	if errors.Is(err, outbound.ErrResponseTooLarge) {
		if len(ids) == 1 {
			u.skip(ids[0], incidentlib.RuleSize, "the upstream's answer for this one record is over the response size limit")
			return nil
		}
		if err := u.ask(ctx, ids[:len(ids)/2], got); err != nil {
			return err
		}
		return u.ask(ctx, ids[len(ids)/2:], got)
	}
	if err != nil {
		return err
	}
	want := make(map[string]bool, len(ids))
	for _, id := range ids {
		want[id] = true
	}
	tax, maxRecord := u.cfg.Taxonomy, u.cfg.MaxRecordBytes
	if u.cfg.Rules != nil {
		tax, maxRecord = u.cfg.Rules()
	}
	for _, raw := range recs {
		if string(raw) == "null" {
			continue
		}
		var inc incidentlib.Incident
		if derr := json.Unmarshal(raw, &inc); derr != nil {
			if id := iljson.PeekID(raw); want[id] {
				u.skip(id, incidentlib.RuleStructure, derr.Error())
			}
			continue
		}
		if !want[inc.ID] {
			continue
		}
		// The one validation of records from outside, on the record as
		// the upstream sent it.
		verr := inc.ValidateIncoming(tax, maxRecord, len(raw))
		if rule := incidentlib.SkipRule(verr); rule != "" {
			u.skip(inc.ID, rule, incidentlib.ErrorMessage(verr))
			continue
		}
		got[inc.ID] = &inc
	}
	return nil
}

// skip counts and logs a record of the upstream that is left out.
func (u *Reader) skip(id string, rule incidentlib.Rule, why string) {
	u.skipped.WithLabelValues(string(rule)).Inc()
	u.cfg.Logger.Warn("left out a record of the upstream library: it breaks the rules records are held to", "upstream", u.cfg.URL, "id", id, "rule", string(rule), "err", why)
}

func headIDs(ids []string) string {
	if len(ids) <= 5 {
		return strings.Join(ids, ", ")
	}
	return strings.Join(ids[:5], ", ") + ", ..."
}
