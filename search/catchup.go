package search

import (
	"context"
	"errors"
	"fmt"
	"runtime"
	"sync"
	"time"

	"github.com/incidentlib/incidentlib"
)

// Catching up with the store: the index applies the store's change log
// in batches, read and analyzed in parallel, at open, before every search
// and, with Options.Follow, after every commit.

// CatchUp applies every change the store committed before the call. It
// costs one atomic load when the index is current. Concurrent callers
// wait for one another (or for ctx).
func (x *Index) CatchUp(ctx context.Context) error {
	if x.seq.Load() >= x.db.Seq() {
		return nil
	}
	select {
	case x.lock <- struct{}{}:
	case <-ctx.Done():
		return incidentlib.Errorf(incidentlib.ETIMEOUT, "the search index was catching up when the request ran out of time")
	}
	defer func() { <-x.lock }()
	// The next batch is read and analyzed while the current one is
	// applied.
	var ahead chan changePage
	for {
		var pg changePage
		if ahead != nil {
			pg = <-ahead
			ahead = nil
		} else {
			if x.seq.Load() >= x.db.Seq() {
				return nil
			}
			pg = x.readChanges(ctx, x.seq.Load())
		}
		if pg.err != nil {
			return pg.err
		}
		// Fewer than a batch: the read saw every change up to target.
		next := pg.target
		if full := len(pg.changes) == x.opts.BatchSize; full {
			next = pg.changes[len(pg.changes)-1].seq
			ahead = make(chan changePage, 1)
			go func() { ahead <- x.readChanges(ctx, next) }()
		} else if len(pg.changes) > 0 {
			next = max(next, pg.changes[len(pg.changes)-1].seq)
		}
		if err := x.applyBatches(pg.changes, pg.batches, next); err != nil {
			if ahead != nil {
				<-ahead
			}
			return err
		}
	}
}

// changePage is one read of the change log, analyzed, with the store
// sequence read before it.
type changePage struct {
	changes []changeRef
	batches []*batchIndex // the analyzed records
	target  uint64
	err     error
}

// readChanges reads the changes after from and analyzes their records, in
// parallel.
func (x *Index) readChanges(ctx context.Context, from uint64) changePage {
	target := x.db.Seq()
	raw, err := x.db.RawChangesSince(ctx, from, x.opts.BatchSize)
	if err != nil {
		return changePage{err: err}
	}
	workers := min(runtime.GOMAXPROCS(0), max(1, len(raw)/16))
	batches := make([]*batchIndex, workers)
	errs := make([]error, workers)
	var wg sync.WaitGroup
	for w := range workers {
		wg.Add(1)
		go func() {
			defer wg.Done()
			a := getAnalyzer()
			defer putAnalyzer(a)
			b := getBatch()
			// Each worker takes a run of consecutive changes, so that the
			// batches, applied in order, keep every posting in slot order.
			for i := w * len(raw) / workers; i < (w+1)*len(raw)/workers; i++ {
				if c := raw[i]; !c.Deleted {
					inc, err := textsOf(c.Record)
					if err != nil {
						errs[w] = fmt.Errorf("search: the record of %s (change %d): %w", c.ID, c.Seq, err)
						return
					}
					b.addIncident(a, i, inc)
				}
			}
			batches[w] = b
		}()
	}
	wg.Wait()
	if err := errors.Join(errs...); err != nil {
		return changePage{err: err}
	}
	changes := make([]changeRef, len(raw))
	for i, c := range raw {
		n, ok := incidentlib.ParseID(c.ID)
		if !ok {
			return changePage{err: fmt.Errorf("search: change %d names a malformed id %q", c.Seq, c.ID)}
		}
		changes[i] = changeRef{num: n, seq: c.Seq, deleted: c.Deleted}
	}
	return changePage{changes: changes, batches: batches, target: target}
}

// apply applies changes given with their records, and the new sequence,
// at once.
func (x *Index) apply(changes []incidentlib.Change, seq uint64) error {
	refs := make([]changeRef, len(changes))
	b := getBatch()
	a := getAnalyzer()
	defer putAnalyzer(a)
	for i, c := range changes {
		n, ok := incidentlib.ParseID(c.ID)
		if !ok {
			return fmt.Errorf("search: change %d names a malformed id %q", c.Seq, c.ID)
		}
		refs[i] = changeRef{num: n, seq: c.Seq, deleted: c.Deleted}
		if !c.Deleted {
			b.addIncident(a, i, c.Incident)
		}
	}
	return x.applyBatches(refs, []*batchIndex{b}, seq)
}

// applyBatches applies analyzed changes and the new sequence at once.
func (x *Index) applyBatches(changes []changeRef, batches []*batchIndex, seq uint64) error {
	x.mu.Lock()
	defer x.mu.Unlock()
	x.mem.applyBatches(changes, batches)
	for _, b := range batches {
		b.release()
	}
	x.mem.seq = seq
	x.dirty = true
	x.seq.Store(seq)
	return nil
}

// follow catches the index up after every commit of the store until ctx
// is done, and saves it every saveEvery when it changed. Errors are
// logged; the next search or commit retries.
func (x *Index) follow(ctx context.Context) {
	t := time.NewTicker(saveEvery)
	defer t.Stop()
	seen := x.Seq() // woken by the first commit above it
	for {
		select {
		case <-ctx.Done():
			return
		case <-x.db.SeqAbove(seen):
			seen = x.db.Seq()
			if err := x.CatchUp(ctx); err != nil && ctx.Err() == nil {
				x.opts.Logger.Error("search index catch-up failed", "err", err, "index_seq", x.Seq(), "store_seq", x.db.Seq())
			}
		case <-t.C:
			x.mu.RLock()
			due := x.dirty && time.Since(x.savedAt) >= saveEvery
			x.mu.RUnlock()
			if due {
				if err := x.saveIfDirty(); err != nil {
					x.saveFailed(err)
				}
			}
		}
	}
}
