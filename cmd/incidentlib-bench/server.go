package main

import (
	"net"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/incidentlib/incidentlib"
	"github.com/incidentlib/incidentlib/server"
	"github.com/incidentlib/incidentlib/server/metrics"
	"github.com/incidentlib/incidentlib/storage"
)

// newServer builds the library's HTTP handler over db as serve composes
// it (server.Assemble), with metrics on reg (private when nil) and search
// (nil: none).
func newServer(db *storage.DB, search incidentlib.SearchService, cfg server.Config, reg prometheus.Registerer) (*server.Server, error) {
	m, err := metrics.New(reg)
	if err != nil {
		return nil, err
	}
	srv, _, err := server.Assemble(db.Reads(), db.Writer(), nil, search, m, cfg)
	return srv, err
}

// serveUncached serves db (and search, when not nil) on loopback as a
// production server without the response cache, so that every request is
// answered from the store: the setting of the benchmarks that measure
// the store's reads.
func serveUncached(db *storage.DB, search incidentlib.SearchService) (url string, stop func(), err error) {
	return serveUncachedWith(db, search, server.Config{})
}

// serveUncachedWith is serveUncached with cfg's other settings (an admin
// token, for the benchmarks that write).
func serveUncachedWith(db *storage.DB, search incidentlib.SearchService, cfg server.Config) (url string, stop func(), err error) {
	cfg.Prod, cfg.ResponseCacheBytes = true, -1
	srv, err := newServer(db, search, cfg, prometheus.NewRegistry())
	if err != nil {
		return "", nil, err
	}
	srv.SetReady(true)
	return listen(srv)
}

// readyServer builds the handler over db with cfg (newServer: private
// metrics, no search), marks it ready and opens a loopback listener for
// the benchmark to serve it on with its own http.Server.
func readyServer(db *storage.DB, cfg server.Config) (*server.Server, net.Listener, error) {
	srv, err := newServer(db, nil, cfg, nil)
	if err != nil {
		return nil, nil, err
	}
	srv.SetReady(true)
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return nil, nil, err
	}
	return srv, ln, nil
}
