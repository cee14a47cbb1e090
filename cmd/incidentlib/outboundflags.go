package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"sync"
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/incidentlib/incidentlib"
	"github.com/incidentlib/incidentlib/outbound"
	"github.com/incidentlib/incidentlib/replica"
	"github.com/incidentlib/incidentlib/server"
	"github.com/incidentlib/incidentlib/storage"
	"github.com/incidentlib/incidentlib/upstream"
)

// The outbound jobs of serve: following a primary (--follow), links to an
// upstream library (--upstream, a store flag since import and check honour
// it too) and the background link check (--linkcheck-interval).

// outboundFlags are serve's flags for the outbound jobs.
type outboundFlags struct {
	follow            *string
	followInterval    *time.Duration
	followWait        *time.Duration
	followToken       *string
	upstreamCacheTTL  *time.Duration
	upstreamCacheSize *int
	upstreamTimeout   *time.Duration
	linkcheckInterval *time.Duration
	linkcheck         linkcheckFlags
	store             storeFlags
}

func addOutboundFlags(f *flags, sf storeFlags) *outboundFlags {
	o := &outboundFlags{
		follow:            f.str("follow", "", "run as a read-only replica of the primary library at this URL (such as http://primary:8080): bootstrap from its change feed, then follow it"),
		followInterval:    f.duration("follow-interval", time.Second, false, "shortest time between two polls of the primary that found nothing new (short polling; at most 10m)"),
		followWait:        f.duration("follow-wait", 25*time.Second, true, "how long the primary holds a poll that finds nothing (long poll; 0s polls every --follow-interval; at most 60s)"),
		followToken:       f.str("follow-token", "", "an admin token of the --follow primary: the replica then copies its history too (every version with its author), not only current records (prefer the environment variable: flags show in ps)"),
		upstreamCacheTTL:  f.duration("upstream-cache-ttl", 5*time.Minute, false, "how long incidents read from --upstream are kept"),
		upstreamCacheSize: f.count("upstream-cache-size", 10_000, 1, "incidents read from --upstream that are kept, in incidents"),
		upstreamTimeout:   f.duration("upstream-timeout", 2*time.Second, false, "longest wait for one --upstream call (never more than 3/4 of what is left of the request's deadline)"),
		linkcheckInterval: f.duration("linkcheck-interval", 0, true, "check every source link in the background this often (such as 24h); 0s turns it off"),
		linkcheck:         addLinkcheckFlags(f),
		store:             sf,
	}
	f.checks = append(f.checks, func() error {
		if *o.follow != "" {
			p, err := replica.ParsePrimary(*o.follow)
			if err != nil {
				return fmt.Errorf("--follow: %v", err)
			}
			*o.follow = p
			if *o.linkcheckInterval > 0 {
				return errors.New("--linkcheck-interval writes to the store: run it on the primary, not on a --follow replica")
			}
		}
		if *o.followInterval > replica.MaxInterval {
			return fmt.Errorf("--follow-interval must be at most %s, got %s", replica.MaxInterval, *o.followInterval)
		}
		if *o.followWait > replica.MaxWait {
			return fmt.Errorf("--follow-wait must be at most %s, got %s", replica.MaxWait, *o.followWait)
		}
		if *o.linkcheckInterval > 0 && *o.linkcheckInterval < time.Minute {
			return fmt.Errorf("--linkcheck-interval must be 0s (off) or at least 1m, got %s", *o.linkcheckInterval)
		}
		return nil
	})
	return o
}

// primary is the URL of the primary a replica follows, "" otherwise.
func (o *outboundFlags) primary() string { return *o.follow }

// outboundJobs are the running jobs; stop ends them and waits.
type outboundJobs struct {
	cancel context.CancelFunc
	wg     sync.WaitGroup
}

func (j *outboundJobs) stop() {
	j.cancel()
	j.wg.Wait()
}

// run runs job in a goroutine that stop waits for.
func (j *outboundJobs) run(job func()) {
	j.wg.Add(1)
	go func() {
		defer j.wg.Done()
		job()
	}()
}

// client builds the outbound client when serve needs one (--follow or
// --upstream), nil otherwise.
func (o *outboundFlags) client(reg prometheus.Registerer) (*outbound.Client, error) {
	if *o.follow == "" && *o.store.upstream == "" {
		return nil, nil
	}
	return outbound.New(outbound.DefaultConfig(), reg)
}

// incidents is what the resolvers read incidents from with --upstream:
// the store first, the upstream library for the linked ids it lacks. It is
// nil without --upstream (the store alone).
func (o *outboundFlags) incidents(db *storage.DB, client *outbound.Client, reg prometheus.Registerer, logger *slog.Logger) (incidentlib.IncidentService, error) {
	if *o.store.upstream == "" {
		return nil, nil
	}
	cfg := upstream.DefaultConfig(*o.store.upstream)
	cfg.CacheTTL, cfg.CacheSize, cfg.Timeout = *o.upstreamCacheTTL, *o.upstreamCacheSize, *o.upstreamTimeout
	cfg.Rules = db.Incidents().RecordRules // the rules of the store's own records, as they are at each read
	cfg.Logger = logger
	up, err := upstream.New(cfg, client, reg)
	if err != nil {
		return nil, err
	}
	logger.Info("linked incidents not in this library resolve from the upstream", "upstream", up.URL())
	return upstream.LocalFirst(db.Incidents(), up), nil
}

// start starts the jobs the flags ask for over the outbound client (see
// client). A replica is marked ready (/readyz) once it is level with its
// primary; any other server is ready at once.
func (o *outboundFlags) start(ctx context.Context, db *storage.DB, client *outbound.Client, srv *server.Server, reg prometheus.Registerer, logger *slog.Logger) (*outboundJobs, error) {
	jctx, cancel := context.WithCancel(ctx)
	jobs := &outboundJobs{cancel: cancel}
	if *o.follow == "" && *o.linkcheckInterval == 0 {
		srv.SetReady(true)
		return jobs, nil
	}
	if *o.follow == "" {
		srv.SetReady(true)
	} else {
		cfg := replica.DefaultConfig(*o.follow)
		cfg.Interval, cfg.Wait, cfg.Logger, cfg.Token = *o.followInterval, *o.followWait, logger, *o.followToken
		f, err := replica.New(ctx, db.Follower(), client, cfg, reg)
		if err != nil {
			cancel()
			return nil, err
		}
		jobs.run(func() { _ = f.Run(jctx) })
		jobs.run(func() {
			if f.WaitLevel(jctx) == nil {
				srv.SetReady(true)
			}
		})
	}
	if *o.linkcheckInterval > 0 {
		lc, err := o.linkcheck.checker(logger)
		if err != nil {
			cancel()
			return nil, err
		}
		jobs.run(func() { lc.Every(jctx, db.Incidents(), *o.linkcheckInterval) })
	}
	return jobs, nil
}

// reportUpstreamLinks tells check how many links resolve from the
// upstream (they are not dangling with --upstream).
func reportUpstreamLinks(ctx context.Context, db *storage.DB, sf storeFlags, stdout io.Writer) error {
	if *sf.upstream == "" {
		return nil
	}
	links, err := db.Incidents().UpstreamLinks(ctx)
	if err != nil {
		return err
	}
	for _, l := range links {
		fmt.Fprintf(stdout, "incident %s: %s %s is an upstream link (resolved from %s)\n", l.From, l.Kind, l.To, *sf.upstream)
	}
	fmt.Fprintf(stdout, "check: %d upstream links\n", len(links))
	return nil
}

// addUpstreamFlag is --upstream, a flag of every command that opens the
// store: with it, links to incidents not in the store are accepted on
// writes and imports, check lists them as upstream links, and serve reads
// them from the upstream library.
func addUpstreamFlag(f *flags) *string {
	p := f.str("upstream", "", "an upstream library (such as http://library:8080) whose incidents this library may link to")
	f.checks = append(f.checks, func() error {
		if *p == "" {
			return nil
		}
		u, err := replica.ParsePrimary(*p)
		if err != nil {
			return fmt.Errorf("--upstream: %v", err)
		}
		*p = u
		return nil
	})
	return p
}

// The store as a replica's follower writes it.
var _ replica.Store = storage.Follower{}
