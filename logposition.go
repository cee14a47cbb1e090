package incidentlib

import (
	"context"
	"time"
)

// A store that is a node of a cluster applies the writes of a replicated
// log (cluster/): every node applies the same messages in the same order,
// each in one transaction of its store together with the log position it
// reached, so that the same message gives the same bytes on every node.

// LogPosition is the place of one write in a replicated log: its sequence
// in the log and the time the node that received it stamped on it. A
// write run with a LogPosition in its context (WithLogPosition) stamps At
// instead of the store's clock and stores Seq as the store's log position
// in the same transaction, whether it wrote, changed nothing or was
// refused by a check of the stored state (CONFLICT, NOT_FOUND).
type LogPosition struct {
	Seq uint64
	At  time.Time
}

// WithLogPosition marks the writes run with ctx as the log's write at p.
func WithLogPosition(ctx context.Context, p LogPosition) context.Context { return withValue(ctx, p) }

// LogPositionFrom returns the log position WithLogPosition put in ctx.
func LogPositionFrom(ctx context.Context) (LogPosition, bool) { return valueFrom[LogPosition](ctx) }

// LogApplier is a store that applies a replicated log's writes through
// its IncidentWriter under WithLogPosition.
type LogApplier interface {
	// LogSeq returns the log position the store has applied up to (0:
	// none), and whether the store is a cluster node's (it applied a
	// write of a log or was marked with MarkLogged).
	LogSeq(ctx context.Context) (seq uint64, logged bool, err error)

	// SkipLogged stores seq as the log position without writing anything
	// else, recording rejected (when not nil) as the reason the write at
	// seq was refused: a message refused before it reached the store's
	// transaction (a bad record, a newer format), so that every node
	// records the same. seq must be above the stored position, else
	// ECONFLICT.
	SkipLogged(ctx context.Context, seq uint64, rejected error) error

	// Rejections returns the writes of the log refused, by sequence, with
	// their codes and messages, as every node recorded them.
	Rejections(ctx context.Context) ([]LogRejection, error)
}

// LogGrouper is a store that applies consecutive writes of a log in one
// transaction (group commit): one commit, and one sync to disk, for many
// writes, each judged exactly as if applied alone.
type LogGrouper interface {
	// ApplyLogGroup runs fn with a context under which the store's writes
	// run under WithLogPosition join one write transaction, in the order
	// fn makes them. A write refused by a check of the stored state
	// writes only its position and refusal, as alone; one refused before
	// the transaction is recorded with g.Skip. The transaction commits
	// (and is synced) once fn returns nil, with the position of the last
	// write; nothing is written if fn returns an error or a write failed
	// after it began writing (g.Broken): the error is returned. Only the
	// incident writes (IncidentWriter's and HistoryWriter's but imports
	// and purges) join a group; another write under its context fails.
	ApplyLogGroup(ctx context.Context, fn func(ctx context.Context, g LogGroup) error) error
}

// LogGroup is the transaction of an ApplyLogGroup, for its fn.
type LogGroup interface {
	// Seq returns the log position the transaction has reached so far.
	Seq() uint64
	// Skip stores seq as the position with the refusal rejected, as
	// LogApplier.SkipLogged does, in the transaction.
	Skip(seq uint64, rejected error) error
	// Broken returns the error of a write that failed after it began
	// writing, nil while there is none: the group is then rolled back.
	Broken() error
}

// LogRejection is a write of the log that the store refused.
type LogRejection struct {
	Seq     uint64
	Code    string
	Message string
}
