package cluster

import (
	"context"
	"sync"
	"sync/atomic"
	"time"

	"github.com/incidentlib/incidentlib"
)

// Member is a node of the cluster with its store: the Node, the Applier
// that follows the log into the store, and the Writer that serves the
// library's writes through the log. cmd/incidentlib composes it for serve.
type Member struct {
	Node    *Node
	Applier *Applier
	Writer  *Writer
	metrics *Metrics

	cancel context.CancelFunc
	wg     sync.WaitGroup
	ready  atomic.Bool
	readyC chan struct{}
	// followErr is why following the log stopped (a newer version).
	followErr atomic.Pointer[error]
}

// Join starts a member over store: the node (Start), the applier from the
// store's log position, the follower of the log and the quorum watch. The
// member is Ready once it applied the log up to the sequence the stream
// had when it first reached it, or, when it finds no quorum, after
// cfg.StartTimeout (its reads are then stale). reader reads the store (for
// the writer's stamps), tax and maxRecord are its record rules; m may be
// nil.
func Join(ctx context.Context, cfg Config, store Store, reader Reads, tax *incidentlib.Taxonomy, maxRecord int, m *Metrics) (*Member, error) {
	node, err := Start(ctx, cfg)
	if err != nil {
		return nil, err
	}
	return Attach(ctx, node, store, reader, tax, maxRecord, m)
}

// Attach is Join with a node already started (Start), for a caller that
// needs the node before it opens the store (FetchSnapshot). On error the
// node is closed.
func Attach(ctx context.Context, node *Node, store Store, reader Reads, tax *incidentlib.Taxonomy, maxRecord int, m *Metrics) (*Member, error) {
	cfg := node.cfg
	if _, logged, err := store.LogSeq(ctx); err != nil {
		node.Close()
		return nil, err
	} else if !logged {
		// A cluster node's store from now on: offline writers refuse it.
		if err := store.SkipLogged(ctx, 0, nil); err != nil {
			node.Close()
			return nil, err
		}
	}
	node.metrics = m
	app, err := NewApplier(ctx, store, m, node.log)
	if err != nil {
		node.Close()
		return nil, err
	}
	app.node = node
	mb := &Member{Node: node, Applier: app, Writer: NewWriter(node, app, reader, tax, maxRecord), metrics: m, readyC: make(chan struct{})}
	m.watchQuorum(node)
	node.WatchQuorum(time.Second)
	node.WatchHealth(time.Second)
	if _, err := node.answerApplied(app.Applied); err != nil { // erase.go
		node.Close()
		return nil, err
	}
	fctx, cancel := context.WithCancel(context.Background())
	mb.cancel = cancel
	mb.wg.Add(3)
	go func() {
		defer mb.wg.Done()
		node.eraseLoop(fctx)
	}()
	go func() {
		defer mb.wg.Done()
		if err := node.Follow(fctx, app.Applied(), app.ApplyBatch); err != nil {
			mb.followErr.Store(&err)
		}
	}()
	go func() {
		defer mb.wg.Done()
		mb.becomeReady(fctx, cfg.StartTimeout)
	}()
	return mb, nil
}

// becomeReady waits until the store applied the log up to the stream's
// last sequence as first seen, or start passes without a quorum.
func (mb *Member) becomeReady(ctx context.Context, start time.Duration) {
	defer close(mb.readyC)
	deadline := time.Now().Add(start)
	for {
		target, err := mb.Node.LastSeq(ctx)
		if err == nil {
			if mb.Applier.WaitApplied(ctx, target) != nil {
				return
			}
			// Ready once this node's server also holds a current copy of
			// the stream, by the leader's account and by its own health
			// check (not catching up): a node that restarted is then one
			// that can stand in for a lost leader (or the start timeout
			// passed).
			for !(mb.Node.Current() && mb.Node.checkHealth()) && time.Now().Before(deadline) && ctx.Err() == nil {
				time.Sleep(250 * time.Millisecond)
				_, _ = mb.Node.LastSeq(ctx)
			}
			if !(mb.Node.Current() && mb.Node.Healthy()) && ctx.Err() == nil {
				mb.Node.log.Warn("this node's copy of the stream is not current within the start timeout: serving, but it cannot stand in for a lost leader yet", "start_timeout", start.String())
			}
			mb.ready.Store(true)
			return
		}
		if time.Now().After(deadline) {
			mb.Node.log.Warn("no quorum within the start timeout: serving this node's store, marked stale", "start_timeout", start.String(), "applied", mb.Applier.Applied())
			mb.ready.Store(true)
			return
		}
		select {
		case <-ctx.Done():
			return
		case <-time.After(250 * time.Millisecond):
		}
	}
}

// WaitReady waits until the member became ready (or ctx ends).
func (mb *Member) WaitReady(ctx context.Context) error {
	select {
	case <-mb.readyC:
		return nil
	case <-ctx.Done():
		return ctx.Err()
	}
}

// Ready reports whether the member may serve: it caught up at start (or
// gave up waiting for a quorum) and applies the log (no newer version
// stopped it).
func (mb *Member) Ready() bool { return mb.ready.Load() && mb.Applier.Stopped() == nil }

// Stale reports whether the member's reads may be behind the cluster: it
// has no quorum.
func (mb *Member) Stale() bool { return !mb.Node.Quorum() }

// Close stops following the log and closes the node.
func (mb *Member) Close() {
	mb.cancel()
	mb.Node.Close()
	mb.wg.Wait()
}
