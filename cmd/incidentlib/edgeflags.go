package main

import (
	"context"
	"fmt"
	"log/slog"
	"time"

	"github.com/incidentlib/incidentlib/server"
	"github.com/incidentlib/incidentlib/server/admin"
	"github.com/incidentlib/incidentlib/server/gqledge"
)

// edgeFlags are serve's flags for the HTTP edge: the whole-response cache,
// HTTP caching, persisted queries, trusted documents and the pprof admin
// listener (server/gqledge: respcache.go, httpcache.go, apq.go, trusted.go; server/admin/pprof.go).
type edgeFlags struct {
	responseCache *byteSize
	cacheControl  *string
	trusted       *string
	apq           *int
	pprofAddr     *string

	docs *gqledge.TrustedDocuments // loaded by the checks
}

func addEdgeFlags(f *flags) *edgeFlags {
	e := &edgeFlags{
		responseCache: f.bytes("response-cache-size", gqledge.DefaultResponseCacheBytes, true,
			"whole GraphQL responses kept, in bytes; invalidated exactly by any write; 0 turns the cache off"),
		cacheControl: f.str("cache-control", gqledge.DefaultCacheControl,
			"Cache-Control of GraphQL GET responses (they carry an ETag; If-None-Match answers 304)"),
		trusted: f.str("trusted-documents", "",
			"a persisted-query manifest (JSON: id to document, or Apollo's format); when set, only its operations are accepted"),
		apq: f.count("apq-cache-size", gqledge.DefaultAPQCacheSize, 0,
			"automatic persisted queries kept, in documents; 0 turns APQ off"),
		pprofAddr: f.str("pprof-addr", "",
			"host:port of a separate admin listener serving /debug/pprof/; empty (the default) is off"),
	}
	f.checks = append(f.checks, func() error {
		if err := gqledge.ValidateCacheControl(*e.cacheControl); err != nil {
			return fmt.Errorf("--cache-control: %v", err)
		}
		if *e.pprofAddr != "" {
			if err := admin.ValidateAdminAddr(*e.pprofAddr); err != nil {
				return fmt.Errorf("--pprof-addr: %v", err)
			}
		}
		if *e.trusted != "" {
			docs, err := gqledge.LoadTrustedDocuments(*e.trusted)
			if err != nil {
				return fmt.Errorf("--trusted-documents: %v", err)
			}
			e.docs = docs
		}
		return nil
	})
	return e
}

// config sets the edge's fields of cfg. With --upstream (o), cached
// responses live no longer than upstream incidents are kept
// (--upstream-cache-ttl).
func (e *edgeFlags) config(cfg server.Config, o *outboundFlags) server.Config {
	cfg.ResponseCacheBytes = int64(*e.responseCache)
	if cfg.ResponseCacheBytes == 0 {
		cfg.ResponseCacheBytes = -1 // off
	}
	cfg.APQCacheSize = *e.apq
	if cfg.APQCacheSize == 0 {
		cfg.APQCacheSize = -1 // off
	}
	cfg.CacheControl = *e.cacheControl
	cfg.TrustedDocuments = e.docs
	cfg.LogRequests = true
	cfg.Upstream = o.upstream()
	cfg.ResponseMaxAge = upstreamMaxAge(o)
	return cfg
}

// startPprof starts the admin listener when --pprof-addr is set; stop is
// never nil.
func (e *edgeFlags) startPprof(logger *slog.Logger) (stop func(), err error) {
	if *e.pprofAddr == "" {
		return func() {}, nil
	}
	_, shutdown, err := admin.StartPprof(*e.pprofAddr, logger)
	if err != nil {
		return nil, err
	}
	return func() {
		ctx, cancel := context.WithTimeout(context.Background(), time.Second)
		defer cancel()
		_ = shutdown(ctx)
	}, nil
}

// upstreamMaxAge is how long a cached response may live when incidents
// come from an upstream library (0 without --upstream).
func upstreamMaxAge(o *outboundFlags) time.Duration {
	if !o.upstream() {
		return 0
	}
	return *o.upstreamCacheTTL
}

// upstream says whether linked incidents come from an upstream library
// (--upstream).
func (o *outboundFlags) upstream() bool {
	return o != nil && o.store.upstream != nil && *o.store.upstream != ""
}
