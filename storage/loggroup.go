package storage

import (
	"context"
	"fmt"

	bolt "go.etcd.io/bbolt"

	"github.com/incidentlib/incidentlib"
)

// Group commit of a cluster log's writes (incidentlib.LogGrouper): a
// cluster node applies many consecutive messages of the log in one bbolt
// transaction, one commit and one fsync for all of them, each judged
// exactly as it would be alone. The writes of a group are the mutations
// (mutateAs): each runs its check and apply on the group's transaction
// in turn; a check that refuses writes only the message's position and
// refusal (as alone, where that transaction commits too), so a refused
// message never takes the others down. A write that fails after it began
// writing (an apply's error, a damaged page, a full disk) breaks the
// group: nothing of the group is committed, and the caller applies its
// messages again one transaction each (cluster/apply.go). A write that is
// not a mutation (an import, the admin's writes) does not join a group:
// under a group's context it fails and breaks the group rather than
// waiting for a second write transaction that the group's own holds.

type logGroupKey struct{}

// logGroup is one ApplyLogGroup's transaction.
type logGroup struct {
	db *DB
	// tx is the group's transaction; nil once the group ended.
	tx *bolt.Tx
	// broken is the error of the write that failed after it began
	// writing: the group rolls back.
	broken error
}

// ApplyLogGroup runs fn with a context under which the log's writes join
// one transaction; see incidentlib.LogGrouper.
func (st ClusterLog) ApplyLogGroup(ctx context.Context, fn func(ctx context.Context, g incidentlib.LogGroup) error) error {
	if err := ctx.Err(); err != nil {
		return ctxError(err)
	}
	if err := st.db.refuseWrite(); err != nil {
		return err
	}
	g := &logGroup{db: st.db}
	err := st.db.updateGuarded(func(tx *bolt.Tx) error {
		g.tx = tx
		defer func() { g.tx = nil }()
		if err := fn(context.WithValue(ctx, logGroupKey{}, g), g); err != nil {
			return err
		}
		return g.broken
	})
	return st.db.writeError(err)
}

// logGroup returns the log group of db that ctx runs under, if any.
func (db *DB) logGroup(ctx context.Context) (*logGroup, bool) {
	g, ok := ctx.Value(logGroupKey{}).(*logGroup)
	return g, ok && g.db == db
}

// join runs the mutation fn on the group's transaction; an error from it
// breaks the group.
func (g *logGroup) join(fn func(*bolt.Tx) error) error {
	if err := g.usable(); err != nil {
		return err
	}
	if err := fn(g.tx); err != nil {
		g.broken = err
		return err
	}
	return nil
}

// outsideGroup is nil unless ctx runs under a log group of db: then the
// write that asks (not a mutation, so it cannot join the group) breaks
// the group and fails instead of waiting for a write transaction the
// group holds.
func (db *DB) outsideGroup(ctx context.Context) error {
	g, ok := db.logGroup(ctx)
	if !ok {
		return nil
	}
	method := writeMethod()
	if method == "" {
		method = "a write"
	}
	return g.refuse(method)
}

// refuse breaks the group with a write that cannot join it (what: the
// write).
func (g *logGroup) refuse(what string) error {
	if err := g.usable(); err != nil {
		return err
	}
	g.broken = fmt.Errorf("storage: %s cannot join a group of the log's writes; nothing of the group was written", what)
	return g.broken
}

func (g *logGroup) usable() error {
	switch {
	case g.tx == nil:
		return fmt.Errorf("storage: a write under a group of the log's writes that has ended; nothing was written")
	case g.broken != nil:
		return fmt.Errorf("storage: an earlier write of the group failed (%w); nothing of the group is written", g.broken)
	}
	return nil
}

// Seq returns the position the group's transaction reached.
func (g *logGroup) Seq() uint64 {
	if g.tx == nil {
		return 0
	}
	return getU64(g.tx.Bucket(bucketMeta).Get(metaLogSeq))
}

// Skip stores seq as the position with the refusal, in the group's
// transaction (SkipLogged's rule: seq above the position, else
// ECONFLICT).
func (g *logGroup) Skip(seq uint64, rejected error) error {
	if err := g.usable(); err != nil {
		return err
	}
	if cur := g.Seq(); seq <= cur {
		return incidentlib.Errorf(incidentlib.ECONFLICT, "the store has applied the log up to %d: write %d is applied already", cur, seq)
	}
	if err := putLogged(g.tx, seq, rejected); err != nil {
		g.broken = err
		return err
	}
	return nil
}

// Broken returns the error that broke the group, nil while none did.
func (g *logGroup) Broken() error { return g.broken }
