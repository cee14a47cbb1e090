package live

import (
	"context"
	"errors"
	"sync"
	"sync/atomic"
	"time"

	"github.com/incidentlib/incidentlib"
)

// ErrClosed is what Next returns once the hub closed (the server shuts
// down): the transports end the stream with a completion.
var ErrClosed = errors.New("live: the hub is closed")

// Subscription is one subscriber's place in the hub.
type Subscription struct {
	h      *Hub
	g      *group
	client string
	// cursor is the seq of the last change handed to the subscriber (or
	// where it started); the reader alone moves it.
	cursor uint64
	ch     chan Item
	// replaying: the cursor is behind the reader's position (a resume
	// from an older since), so a receive makes room for more replay.
	replaying atomic.Bool

	once   sync.Once
	done   chan struct{} // closed by end
	err    error         // why it ended, set before done is closed
	reason Reason
}

// Item is one event for one subscriber: the change, and whether the
// incident matches the subscriber's filter after it.
type Item struct {
	Event   *Event
	Matches bool
}

// Next waits for the subscriber's next event. It returns ErrClosed when
// the hub closed, the error that ended the subscription (a subscriber
// that fell behind: EUNAVAILABLE saying how to resume), or ctx's error.
func (s *Subscription) Next(ctx context.Context) (Item, error) {
	it, _, err := s.NextOr(ctx, nil)
	return it, err
}

// NextOr is Next that also returns, with ticked set, when tick fires
// first (the transports' keep-alive pings).
func (s *Subscription) NextOr(ctx context.Context, tick <-chan time.Time) (it Item, ticked bool, err error) {
	select {
	case <-s.done:
		return Item{}, false, s.err
	default:
	}
	select {
	case it := <-s.ch:
		if s.catchingUp() {
			s.h.poke() // room for the next page of its replay
		}
		return it, false, nil
	case <-s.done:
		return Item{}, false, s.err
	case <-ctx.Done():
		return Item{}, false, ctx.Err()
	case <-tick:
		return Item{}, true, nil
	}
}

// Done is closed when the hub ended the subscription; Err then says why.
func (s *Subscription) Done() <-chan struct{} { return s.done }

// Err is why the hub ended the subscription, nil while it runs.
func (s *Subscription) Err() error {
	select {
	case <-s.done:
		return s.err
	default:
		return nil
	}
}

// Reason is why the hub ended the subscription (valid once Done is closed).
func (s *Subscription) Reason() Reason { <-s.done; return s.reason }

// Close ends the subscription from the client's side.
func (s *Subscription) Close() {
	s.h.remove(s)
	s.once.Do(func() { s.err = ErrClosed; close(s.done) })
}

// end ends the subscription from the hub's side.
func (s *Subscription) end(err error, r Reason) {
	if !s.h.remove(s) {
		return
	}
	s.once.Do(func() {
		s.err, s.reason = err, r
		s.h.dropped[r].Add(1)
		close(s.done)
	})
}

func (s *Subscription) catchingUp() bool { return s.replaying.Load() }

// slow is the error of a subscriber that fell behind its buffer.
func slow(buffer int) error {
	return incidentlib.Errorf(incidentlib.EUNAVAILABLE,
		"the subscriber fell more than %d events behind and was closed: subscribe again with since set to the seq of the last event received", buffer)
}

// Event is one change as every subscriber gets it, with its encodings.
type Event struct {
	Change incidentlib.Change

	mu   sync.Mutex
	encs []*encoding
}

type encoding struct {
	key  string
	mu   sync.Mutex
	done bool
	b    []byte
}

// Encoded returns the event's bytes for the selection key (a subscription
// document, its variables and whatever else changes its answer): the
// first caller with a key runs encode, the others with the same key wait
// for it and share its bytes (read only). A failed encoding is not kept.
func (e *Event) Encoded(key string, encode func() ([]byte, error)) ([]byte, error) {
	e.mu.Lock()
	var enc *encoding
	for _, x := range e.encs {
		if x.key == key {
			enc = x
			break
		}
	}
	if enc == nil {
		enc = &encoding{key: key}
		e.encs = append(e.encs, enc)
	}
	e.mu.Unlock()
	enc.mu.Lock()
	defer enc.mu.Unlock()
	if enc.done {
		return enc.b, nil
	}
	b, err := encode()
	if err != nil {
		return nil, err
	}
	enc.b, enc.done = b, true
	return b, nil
}
