package cluster

import (
	"context"
	"net/http"
	"time"

	"github.com/incidentlib/incidentlib"
	"github.com/incidentlib/incidentlib/tracing"
)

// Group commit. The follower hands the applier what one read of its copy
// of the stream returned (up to fetchBatch messages, follow.go); the
// applier applies each run of consecutive incident writes in one
// transaction of the store (incidentlib.LogGrouper): one commit, one
// fsync, for the run, bounded by groupMessages and groupBytes. Every
// write of the run is judged on the state its predecessors left, as
// alone: a write refused by the store writes only its position and
// refusal and the run goes on; the position of the run's last write is
// stored in the same transaction. Nothing is acknowledged (handed to the
// request that published it) before the transaction committed. A write
// that fails after it began writing, or a fault of this node, rolls the
// whole run back, and its messages are applied again one transaction
// each (Apply), which gives the same results: the store decides each
// write on the same state either way.

const (
	// groupMessages bounds the messages of one transaction.
	groupMessages = 128
	// groupBytes bounds the messages' bytes of one transaction (a run
	// past it ends before the message that would cross it).
	groupBytes = 4 << 20
)

// grouped reports whether a write of op joins a group: the incident
// writes the store runs as mutations, and the chunks of imports, which
// write nothing but the position. Purges (erase.go notes what they
// erase), imports, imports of a history and the admin's writes are
// applied one transaction each. TestGroupedOps names every Op.
func grouped(op Op) bool {
	switch op {
	case OpUpsert, OpDelete, OpRestore, OpSubmit, OpDecide, OpWithdraw, OpImportChunk, OpHistoryChunk:
		return true
	}
	return false
}

// ApplyBatch applies msgs, consecutive messages of the log in order
// (Node.Follow's apply function): each run of incident writes in one
// transaction, the other messages alone (Apply). It returns an error only
// where Apply does (a newer version, ctx ended).
func (a *Applier) ApplyBatch(ctx context.Context, msgs []Message) error {
	for len(msgs) > 0 {
		ws := a.run(msgs)
		if len(ws) < 2 {
			if err := a.Apply(ctx, msgs[0]); err != nil {
				return err
			}
			msgs = msgs[1:]
			continue
		}
		if err := a.applyGroup(ctx, msgs[:len(ws)], ws); err != nil {
			return err
		}
		msgs = msgs[len(ws):]
	}
	return nil
}

// run returns the writes of the run of grouped messages msgs begins with,
// within the bounds; none when the first is not one.
func (a *Applier) run(msgs []Message) []Write {
	var ws []Write
	size := 0
	for _, m := range msgs {
		if len(ws) == groupMessages || size+len(m.Data) > groupBytes && len(ws) > 0 {
			break
		}
		if headerInt(m.Header, HeaderFormat) > FormatVersion || headerInt(m.Header, HeaderRules) > RulesVersion {
			break // Apply stops there
		}
		var w Write
		if err := decodeWrite(m.Data, &w); err != nil || !grouped(w.Op) {
			break
		}
		ws = append(ws, w)
		size += len(m.Data)
	}
	return ws
}

// applyGroup applies msgs, whose writes are ws, in one transaction, or,
// if that fails, one transaction each.
func (a *Applier) applyGroup(ctx context.Context, msgs []Message, ws []Write) error {
	start := time.Now()
	results := make([]Result, len(msgs))
	err := a.store.ApplyLogGroup(ctx, func(gctx context.Context, g incidentlib.LogGroup) error {
		for i, m := range msgs {
			mctx, span := tracing.Start(tracing.Extract(gctx, http.Header(m.Header)), "cluster apply")
			res := a.applyWrite(mctx, m, &ws[i])
			span.End()
			if err := g.Broken(); err != nil {
				return err
			}
			if retried(res.Err) {
				return res.Err
			}
			if g.Seq() < m.Seq {
				// Refused before the store's transaction (a bad record):
				// the position passes it, with the refusal.
				if err := g.Skip(m.Seq, res.Err); err != nil {
					return err
				}
			}
			results[i] = res
		}
		return nil
	})
	if err != nil {
		if ctx.Err() != nil {
			return ctx.Err()
		}
		a.log.Info("a group of the log's writes was rolled back; applying its writes one transaction each",
			"first", msgs[0].Seq, "last", msgs[len(msgs)-1].Seq, "err", err)
		for _, m := range msgs {
			if err := a.Apply(ctx, m); err != nil {
				return err
			}
		}
		return nil
	}
	a.metrics.observeApply(time.Since(start), len(msgs))
	a.done(msgs, results)
	return nil
}
