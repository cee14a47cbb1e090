package admin

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"net/http"
	"net/http/pprof"
	"time"
)

// The profiler is served on a separate admin listener (serve --pprof-addr,
// off by default), never on the public one: profiles show internals and
// the CPU profile costs CPU while it runs. Bind it to loopback or a private
// interface.

// PprofHandler serves net/http/pprof under /debug/pprof/.
func PprofHandler() http.Handler {
	mux := http.NewServeMux()
	mux.HandleFunc("GET /debug/pprof/", pprof.Index)
	mux.HandleFunc("GET /debug/pprof/cmdline", pprof.Cmdline)
	mux.HandleFunc("GET /debug/pprof/profile", pprof.Profile)
	mux.HandleFunc("GET /debug/pprof/symbol", pprof.Symbol)
	mux.HandleFunc("POST /debug/pprof/symbol", pprof.Symbol)
	mux.HandleFunc("GET /debug/pprof/trace", pprof.Trace)
	return mux
}

// ValidateAdminAddr checks a --pprof-addr value: host:port with a port.
func ValidateAdminAddr(addr string) error {
	_, port, err := net.SplitHostPort(addr)
	if err != nil {
		return fmt.Errorf("%q is not host:port (such as 127.0.0.1:6060)", addr)
	}
	if port == "" {
		return fmt.Errorf("%q has no port", addr)
	}
	return nil
}

// StartPprof listens on addr and serves the profiler until stop is called.
// It returns the address it listens on (addr may use port 0). A listener
// not on loopback is logged as a warning.
func StartPprof(addr string, logger *slog.Logger) (bound string, stop func(context.Context) error, err error) {
	if err := ValidateAdminAddr(addr); err != nil {
		return "", nil, err
	}
	ln, err := net.Listen("tcp", addr)
	if err != nil {
		return "", nil, fmt.Errorf("pprof listener: %w", err)
	}
	if logger == nil {
		logger = slog.Default()
	}
	if tcp, ok := ln.Addr().(*net.TCPAddr); ok && !tcp.IP.IsLoopback() {
		logger.Warn("the pprof admin listener is not on loopback: keep it off public networks", "addr", ln.Addr().String())
	}
	hs := &http.Server{
		Handler:           PprofHandler(),
		ReadHeaderTimeout: 5 * time.Second,
		// No WriteTimeout: a CPU profile or trace streams for as long as
		// it was asked to (?seconds=N).
		IdleTimeout: time.Minute,
		ErrorLog:    slog.NewLogLogger(logger.Handler(), slog.LevelWarn),
	}
	go func() {
		if err := hs.Serve(ln); err != nil && !errors.Is(err, http.ErrServerClosed) {
			logger.Error("pprof listener stopped", "err", err)
		}
	}()
	logger.Info("serving pprof", "addr", ln.Addr().String())
	return ln.Addr().String(), hs.Shutdown, nil
}
