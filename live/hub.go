// Package live fans the store's change log out to subscribers: the hub
// behind GraphQL subscriptions (subscription.graphqls). One goroutine
// reads the log, only while someone subscribes, and hands each change to
// every subscriber whose filter it concerns, into a bounded buffer per
// subscriber; a subscriber that falls behind its buffer is closed with an
// error saying where to resume, so that no subscriber grows memory or
// slows the writers. The transports (server/gqledge) execute each event's
// selection once per distinct selection (Event.Encoded) and write it.
//
// The hub takes the store's change log and incident sets, never the
// store: on a replica the log carries the primary's sequences, so a
// subscriber resumes on any replica.
package live

import (
	"context"
	"fmt"
	"strconv"
	"sync"
	"sync/atomic"

	"github.com/RoaringBitmap/roaring/v2"

	"github.com/incidentlib/incidentlib"
)

// Source is what the hub reads: the change log and, for filters, the
// store's sets of matching incidents.
type Source interface {
	incidentlib.ChangeLog
	incidentlib.IncidentSets
}

// Defaults of Options.
const (
	DefaultBuffer       = 256   // events
	DefaultMaxTotal     = 10000 // subscriptions
	DefaultMaxPerClient = 100   // subscriptions
	DefaultPageSize     = 512   // changes
)

// Options bound the hub. Zero fields take the defaults; negative ones are
// refused by New.
type Options struct {
	// Buffer is how many events a subscriber may fall behind before it is
	// closed (DefaultBuffer).
	Buffer int
	// MaxTotal is how many subscriptions the server holds at once, and
	// MaxPerClient how many one client (its token, else its IP) holds
	// (DefaultMaxTotal, DefaultMaxPerClient).
	MaxTotal, MaxPerClient int
	// PageSize is how many changes one read of the log takes
	// (DefaultPageSize).
	PageSize int
}

func (o *Options) withDefaults() error {
	for _, f := range []struct {
		name string
		v    *int
		def  int
	}{{"buffer", &o.Buffer, DefaultBuffer}, {"total limit", &o.MaxTotal, DefaultMaxTotal},
		{"per-client limit", &o.MaxPerClient, DefaultMaxPerClient}, {"page size", &o.PageSize, DefaultPageSize}} {
		switch {
		case *f.v == 0:
			*f.v = f.def
		case *f.v < 0:
			return fmt.Errorf("live: the subscriptions' %s must be positive, got %d", f.name, *f.v)
		}
	}
	return nil
}

// Hub is the one reader of the change log for every subscription.
type Hub struct {
	src  Source
	opts Options

	mu        sync.Mutex
	subs      map[*Subscription]struct{}
	perClient map[string]int
	groups    map[string]*group // by the filter's key
	running   bool              // the reader runs
	pos       uint64            // the reader's position: every change up to it is handed out
	closed    bool
	stop      chan struct{} // closed by Close
	wake      chan struct{} // a catching-up subscriber made room (cap 1)
	idle      chan struct{} // closed when the reader has stopped; replaced when it starts

	active  atomic.Int64
	dropped [numReasons]atomic.Uint64
}

// New makes a hub over src. Nothing runs until the first subscription.
func New(src Source, opts Options) (*Hub, error) {
	if err := opts.withDefaults(); err != nil {
		return nil, err
	}
	h := &Hub{src: src, opts: opts, subs: map[*Subscription]struct{}{}, perClient: map[string]int{},
		groups: map[string]*group{}, stop: make(chan struct{}), wake: make(chan struct{}, 1), idle: make(chan struct{})}
	close(h.idle)
	return h, nil
}

// Options returns the hub's bounds, defaults filled in.
func (h *Hub) Options() Options { return h.opts }

// Reason says why a subscription ended other than by its own client.
type Reason int

// The reasons.
const (
	ReasonSlow     Reason = iota // fell behind its buffer
	ReasonShutdown               // the server shut down
	ReasonError                  // reading the change log failed
	numReasons
)

func (r Reason) String() string {
	return [...]string{"slow", "shutdown", "error"}[r]
}

// Stats are the hub's figures.
type Stats struct {
	Active  int
	Dropped map[string]uint64 // by Reason
}

// Stats reads the hub's figures without waiting on it.
func (h *Hub) Stats() Stats {
	s := Stats{Active: int(h.active.Load()), Dropped: map[string]uint64{}}
	for r := range numReasons {
		s.Dropped[r.String()] = h.dropped[r].Load()
	}
	return s
}

// Subscribe starts a subscription for client (its token's name or its
// IP: the unit of MaxPerClient) to the changes of the incidents that
// match filter (nil: all), after since (nil: the changes committed from
// now on). Returns EBADREQUEST for a malformed since, ESEQUENCEAHEAD for
// one above the store's head, the log's own error for one it no longer
// holds (ESEQUENCECOMPACTED), EINVALID for a bad filter,
// ESUBSCRIPTIONLIMIT past a limit, and EUNAVAILABLE once the hub is
// closed.
func (h *Hub) Subscribe(ctx context.Context, client string, filter *incidentlib.IncidentFilter, since *string) (*Subscription, error) {
	head := h.src.Seq()
	cursor := head
	if since != nil {
		n, err := strconv.ParseUint(*since, 10, 64)
		if err != nil {
			return nil, incidentlib.Errorf(incidentlib.EBADREQUEST, "since must be the seq of an event (a decimal sequence number), got %q", *since)
		}
		if n > head {
			return nil, incidentlib.Errorf(incidentlib.ESEQUENCEAHEAD,
				"since %d is above the store's head %d (a store restored from an older backup?): subscribe without since", n, head)
		}
		// The log refuses a position it no longer holds (history
		// compaction): its error is the answer.
		if _, err := h.src.ChangesSince(ctx, n, 1); err != nil {
			return nil, err
		}
		cursor = n
	}
	key, all := filterKey(filter)
	var member *roaring.Bitmap
	for {
		h.mu.Lock()
		g := h.groups[key]
		if g != nil || member != nil {
			break // with the lock held
		}
		h.mu.Unlock()
		// Read outside the lock; the first subscription of a filter pays
		// it. Without a filter, the empty filter's set: the incidents
		// lists show, for matchesFilter.
		var f incidentlib.IncidentFilter
		if filter != nil {
			f = *filter
		}
		set, err := h.src.MatchSet(ctx, f)
		if err != nil {
			return nil, err
		}
		member = set
	}
	defer h.mu.Unlock()
	switch {
	case h.closed:
		return nil, incidentlib.Errorf(incidentlib.EUNAVAILABLE, "the server is shutting down: subscribe again on another")
	case len(h.subs) >= h.opts.MaxTotal:
		return nil, incidentlib.Errorf(incidentlib.ESUBSCRIPTIONLIMIT, "the server holds %d subscriptions, its limit", h.opts.MaxTotal)
	case h.perClient[client] >= h.opts.MaxPerClient:
		return nil, incidentlib.Errorf(incidentlib.ESUBSCRIPTIONLIMIT, "this client holds %d subscriptions, its limit", h.opts.MaxPerClient)
	}
	g := h.groups[key]
	if g == nil {
		g = &group{key: key, all: all, member: member, subs: map[*Subscription]struct{}{}}
		if !all {
			g.filter = *filter
		}
		h.groups[key] = g
	}
	s := &Subscription{h: h, g: g, client: client, cursor: cursor, ch: make(chan Item, h.opts.Buffer), done: make(chan struct{})}
	g.subs[s] = struct{}{}
	h.subs[s] = struct{}{}
	h.perClient[client]++
	h.active.Add(1)
	if !h.running {
		h.running = true
		h.pos = max(h.src.Seq(), cursor)
		h.idle = make(chan struct{})
		go h.run(h.idle)
	}
	s.replaying.Store(s.cursor < h.pos)
	h.poke()
	return s, nil
}

// poke wakes the reader.
func (h *Hub) poke() {
	select {
	case h.wake <- struct{}{}:
	default:
	}
}

// Close ends every subscription (Next returns ErrClosed, which the
// transports answer with a completion) and refuses new ones. It does not
// wait for the transports; Idle tells when the reader stopped.
func (h *Hub) Close() {
	h.mu.Lock()
	if h.closed {
		h.mu.Unlock()
		return
	}
	h.closed = true
	close(h.stop)
	h.endAllUnlock(ErrClosed, ReasonShutdown)
}

// endAllUnlock ends every subscription with err and r. h.mu is held on
// entry, so that a caller keeps it from its own check (Close: closed) to
// the snapshot of the subscriptions; it is released before they end.
func (h *Hub) endAllUnlock(err error, r Reason) {
	subs := make([]*Subscription, 0, len(h.subs))
	for s := range h.subs {
		subs = append(subs, s)
	}
	h.mu.Unlock()
	for _, s := range subs {
		s.end(err, r)
	}
}

// Idle returns a channel closed once the reader is not running.
func (h *Hub) Idle() <-chan struct{} {
	h.mu.Lock()
	defer h.mu.Unlock()
	return h.idle
}

// remove takes s out of the hub; it reports whether s was in it.
func (h *Hub) remove(s *Subscription) bool {
	h.mu.Lock()
	defer h.mu.Unlock()
	if _, ok := h.subs[s]; !ok {
		return false
	}
	delete(h.subs, s)
	delete(s.g.subs, s)
	if len(s.g.subs) == 0 {
		delete(h.groups, s.g.key)
	}
	if h.perClient[s.client]--; h.perClient[s.client] <= 0 {
		delete(h.perClient, s.client)
	}
	h.active.Add(-1)
	return true
}

// Full says whether client, or the server, holds as many subscriptions
// as it may (a WebSocket upgrade is refused then).
func (h *Hub) Full(client string) bool {
	h.mu.Lock()
	defer h.mu.Unlock()
	return len(h.subs) >= h.opts.MaxTotal || h.perClient[client] >= h.opts.MaxPerClient
}
