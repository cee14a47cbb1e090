package cluster

import (
	"context"
	"fmt"
	"log/slog"
	"net/http"
	"sync"
	"sync/atomic"
	"time"

	lru "github.com/hashicorp/golang-lru/v2"

	"github.com/incidentlib/incidentlib"
	"github.com/incidentlib/incidentlib/tracing"
)

// Store is what the Applier writes: the library's writes, the imports of
// a history and the admin's (tokens by their hash, the taxonomy, the
// organizations), run under incidentlib.WithLogPosition, and the log
// position.
type Store interface {
	incidentlib.IncidentWriter
	incidentlib.HistoryImporter
	incidentlib.TokenWriter
	incidentlib.TaxonomyWriter
	incidentlib.LogApplier
	incidentlib.LogGrouper // group.go
	// IncidentVersion (incidentlib.HistoryService's) gives a purged
	// version's time (erase.go).
	IncidentVersion(ctx context.Context, id string, version int) (*incidentlib.IncidentVersion, error)
}

// Result is what applying one write gave: the answer of the store's
// write, exactly what the node's client is told.
type Result struct {
	Seq      uint64
	Incident *incidentlib.Incident
	Deleted  *incidentlib.DeleteResult
	Imported *incidentlib.ImportResult
	Purged   *incidentlib.IncidentVersion
	// The admin writes' answers.
	Token        *incidentlib.TokenInfo
	Term         *incidentlib.Term
	Organization *incidentlib.Organization
	Merged       *incidentlib.MergeResult
	Glossary     *incidentlib.GlossaryEntry
	Err          error
	// tokenHash is the hash of the token a token_create stored, for the
	// request that made its secret (Writer.CreateToken).
	tokenHash []byte
	// content is the digest of what the message wrote (HeaderContent),
	// which a retry with its key must match (idempotency.go).
	content string
}

// Applier applies the log's messages in order to the node's store, in
// transactions that store the sequence reached (a run of incident writes
// in one, group.go; the others one each), and hands each result to the
// request of this node that published it once its transaction committed.
type Applier struct {
	store   Store
	node    *Node // reads an import's chunks back
	log     *slog.Logger
	metrics *Metrics

	applied atomic.Uint64
	mu      sync.Mutex
	moved   chan struct{} // closed and replaced when applied moves or the applier stops
	waiters map[string]chan Result
	recent  *lru.Cache[string, Result] // results by idempotency key, for retries
	// lastOf is the sequence of the last message applied on each subject
	// of lately (at most lastOfSubjects): a write's guess of its
	// subject's last sequence without a request (writer.go).
	lastOf  *lru.Cache[string, uint64]
	stopped error // why applying stopped (a newer version), nil while it goes on
}

// NewApplier returns an applier over store at the position the store
// applied up to. m may be nil.
func NewApplier(ctx context.Context, store Store, m *Metrics, log *slog.Logger) (*Applier, error) {
	seq, _, err := store.LogSeq(ctx)
	if err != nil {
		return nil, err
	}
	if log == nil {
		log = slog.Default()
	}
	recent, _ := lru.New[string, Result](4096)
	lastOf, _ := lru.New[string, uint64](lastOfSubjects)
	a := &Applier{store: store, log: log, metrics: m, moved: make(chan struct{}), waiters: map[string]chan Result{}, recent: recent, lastOf: lastOf}
	a.applied.Store(seq)
	m.setApplied(seq)
	return a, nil
}

// Applied returns the log position the store applied up to.
func (a *Applier) Applied() uint64 { return a.applied.Load() }

// Stopped returns why applying stopped (a message of a newer version), or
// nil.
func (a *Applier) Stopped() error {
	a.mu.Lock()
	defer a.mu.Unlock()
	return a.stopped
}

// WaitApplied waits until the store applied the log up to seq. Returns
// UNAVAILABLE if applying stopped, the context's error if ctx ends.
func (a *Applier) WaitApplied(ctx context.Context, seq uint64) error {
	for {
		a.mu.Lock()
		moved, stopped := a.moved, a.stopped
		a.mu.Unlock()
		if a.applied.Load() >= seq {
			return nil
		}
		if stopped != nil {
			return incidentlib.Errorf(incidentlib.EUNAVAILABLE, "this node stopped applying the log: %v", stopped)
		}
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-moved:
		}
	}
}

// expect registers the request that publishes the write key: its result
// comes on the channel. cancel forgets it.
func (a *Applier) expect(key string) (<-chan Result, func()) {
	ch := make(chan Result, 1)
	a.mu.Lock()
	a.waiters[key] = ch
	a.mu.Unlock()
	return ch, func() {
		a.mu.Lock()
		delete(a.waiters, key)
		a.mu.Unlock()
	}
}

// resultOf returns the result of the write key if this node applied it
// lately.
func (a *Applier) resultOf(key string) (Result, bool) { return a.recent.Get(key) }

// lastOfSubjects bounds the subjects whose last sequence the applier
// remembers (about 100 bytes each).
const lastOfSubjects = 1 << 16

// lastSeqOf returns the sequence of the last message on subject that this
// node applied, if it applied one lately: what its store holds of the
// subject. The stream may hold a later one (another node's write not yet
// here, or an erased last message): a guess, which a publish that expects
// it confirms or the stream refuses.
func (a *Applier) lastSeqOf(subject string) (uint64, bool) { return a.lastOf.Get(subject) }

// Apply applies one message in a transaction of its own. A write the
// store refuses (a bad record, a conflict found at apply) is recorded as
// refused with the position, identically on every node; an internal error
// (a full disk) is retried until it passes or ctx ends, so that no node
// skips a write another applied. A message of a newer format or rule set
// stops applying: Apply returns an error and Follow ends. (ApplyBatch,
// group.go, is Node.Follow's apply function: it applies runs of incident
// writes in one transaction, and the other messages here.)
func (a *Applier) Apply(ctx context.Context, m Message) error {
	start := time.Now()
	ctx, span := tracing.Start(tracing.Extract(ctx, http.Header(m.Header)), "cluster apply")
	defer span.End()
	if err := a.checkVersion(m); err != nil {
		return err
	}
	var res Result
	for attempt := 0; ; attempt++ {
		res = a.applyOnce(ctx, m)
		if !retried(res.Err) {
			break
		}
		a.log.Error("a write of the log could not be applied; trying again", "seq", m.Seq, "err", res.Err, "attempt", attempt+1)
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-time.After(min(time.Duration(attempt+1)*200*time.Millisecond, 5*time.Second)):
		}
	}
	a.metrics.observeApply(time.Since(start), 1)
	a.done([]Message{m}, []Result{res})
	return nil
}

// retried reports whether an apply's error is no refusal but a fault of
// this node (internal, a full disk): nothing was written, and the write
// is tried again.
func retried(err error) bool {
	return err != nil && (incidentlib.IsInternal(incidentlib.ErrorCode(err)) || incidentlib.ErrorCode(err) == incidentlib.ESTORAGEFULL)
}

// checkVersion stops applying at a message of a newer format or rule set
// than this node's: it returns the error that stops Follow.
func (a *Applier) checkVersion(m Message) error {
	format, rules := headerInt(m.Header, HeaderFormat), headerInt(m.Header, HeaderRules)
	if format <= FormatVersion && rules <= RulesVersion {
		return nil
	}
	err := fmt.Errorf("message %d has format %d and rule set %d; this node knows format %d and rule set %d: upgrade it", m.Seq, format, rules, FormatVersion, RulesVersion)
	a.log.Error("the log holds a write of a newer version: this node stops applying it until it is upgraded",
		"seq", m.Seq, "format", format, "rules", rules, "known_format", FormatVersion, "known_rules", RulesVersion)
	a.metrics.setNewer(true)
	a.mu.Lock()
	a.stopped = err
	close(a.moved)
	a.moved = make(chan struct{})
	a.mu.Unlock()
	return err
}

// done hands the results of msgs, applied and committed in order, to the
// requests of this node that published them and moves the position past
// the last.
func (a *Applier) done(msgs []Message, results []Result) {
	for i, m := range msgs {
		results[i].Seq = m.Seq
		if results[i].Err != nil {
			a.metrics.rejected()
		}
		results[i].content = m.Header.Get(HeaderContent)
		a.recent.Add(m.MsgID, results[i])
		if m.Subject != "" {
			a.lastOf.Add(m.Subject, m.Seq)
		}
	}
	last := msgs[len(msgs)-1].Seq
	a.metrics.setApplied(last)
	a.mu.Lock()
	a.applied.Store(last)
	for i, m := range msgs {
		if ch, ok := a.waiters[m.MsgID]; ok {
			ch <- results[i]
			delete(a.waiters, m.MsgID)
		}
	}
	close(a.moved)
	a.moved = make(chan struct{})
	a.mu.Unlock()
}

// applyOnce runs the write at m.Seq in the store and makes sure the
// position moved past it, with the refusal recorded.
func (a *Applier) applyOnce(ctx context.Context, m Message) Result {
	var res Result
	var w Write
	if err := decodeWrite(m.Data, &w); err != nil {
		res.Err = notAWrite(m.Seq, err)
	} else {
		res = a.applyWrite(ctx, m, &w)
	}
	if retried(res.Err) {
		return res // nothing was written: tried again
	}
	// A write refused before the store's transaction (a bad record) left
	// the position behind: record it with the refusal.
	seq, _, err := a.store.LogSeq(ctx)
	if err != nil {
		return Result{Err: err}
	}
	if seq < m.Seq {
		if err := a.store.SkipLogged(ctx, m.Seq, res.Err); err != nil {
			return Result{Err: err}
		}
	}
	return res
}

func notAWrite(seq uint64, err error) error {
	return incidentlib.Errorf(incidentlib.EINVALID, "message %d is not a write: %v", seq, err)
}

// applyWrite runs the write w of message m in the store, under m's log
// position, the write's time and its author.
func (a *Applier) applyWrite(ctx context.Context, m Message, w *Write) Result {
	var res Result
	wctx := incidentlib.WithLogPosition(ctx, incidentlib.LogPosition{Seq: m.Seq, At: w.At})
	wctx = incidentlib.WithIdentity(wctx, w.identity())
	opts := incidentlib.WriteOptions{ExpectedUpdatedAt: w.ExpectedUpdatedAt, ExpectedVersion: w.ExpectedVersion}
	switch w.Op {
	case OpUpsert:
		res.Incident, res.Err = a.store.UpsertIncident(wctx, w.Record, opts)
	case OpDelete:
		res.Deleted, res.Err = a.store.DeleteIncident(wctx, w.ID, opts)
	case OpRestore:
		res.Incident, res.Err = a.store.RestoreIncident(wctx, w.ID, w.Version, w.Comment, opts)
	case OpSubmit:
		res.Incident, res.Err = a.store.SubmitForReview(wctx, w.ID, opts)
	case OpDecide:
		res.Incident, res.Err = a.store.DecideReview(wctx, w.ID, w.Decision, w.Comment, opts)
	case OpWithdraw:
		res.Incident, res.Err = a.store.WithdrawIncident(wctx, w.ID, w.Comment, opts)
	case OpPurge:
		res.Purged, res.Err = a.purge(wctx, m.Seq, w) // erase.go
	case OpImport:
		res.Imported, res.Err = a.store.ImportIncidents(wctx, w.Records, incidentlib.ImportOptions{KeepUpdatedAt: w.KeepUpdatedAt, OnlyIfNew: w.OnlyIfNew, Merges: w.Merges})
	case OpImportChunk:
		// Applied with its commit: the position passes it.
	case OpImportCommit:
		var recs []*incidentlib.Incident
		if recs, res.Err = a.chunks(ctx, m.Seq, w.Chunks); res.Err == nil {
			res.Imported, res.Err = a.store.ImportIncidents(wctx, recs, incidentlib.ImportOptions{KeepUpdatedAt: w.KeepUpdatedAt, OnlyIfNew: w.OnlyIfNew, Merges: w.Merges})
		}
	default:
		if !a.applyAdmin(wctx, w, &res) && !a.applyHistory(ctx, wctx, m.Seq, w, &res) {
			res.Err = incidentlib.Errorf(incidentlib.EINVALID, "message %d: unknown write %q", m.Seq, w.Op)
		}
	}
	return res
}

// chunks reads an import's chunks back from the log, in order: each must
// be an import chunk before the commit at seq.
func (a *Applier) chunks(ctx context.Context, seq uint64, seqs []uint64) ([]*incidentlib.Incident, error) {
	var recs []*incidentlib.Incident
	err := a.eachChunk(ctx, seq, seqs, OpImportChunk, "import", func(w *Write) { recs = append(recs, w.Records...) })
	return recs, err
}

// eachChunk reads the chunks seqs of the commit at seq back from the log,
// in order, and hands each to add: each must be a message of op before
// the commit (EINVALID otherwise, naming what, the commit's kind). A log
// that cannot be read now is no refusal: the error is internal, and the
// message is tried again.
func (a *Applier) eachChunk(ctx context.Context, seq uint64, seqs []uint64, op Op, what string, add func(*Write)) error {
	if a.node == nil {
		return incidentlib.Errorf(incidentlib.EINTERNAL, "the applier reads no log")
	}
	for _, s := range seqs {
		if s >= seq {
			return incidentlib.Errorf(incidentlib.EINVALID, "%s commit %d names chunk %d, not before it", what, seq, s)
		}
		data, err := a.node.GetMsg(ctx, s)
		if incidentlib.ErrorCode(err) == incidentlib.EUNAVAILABLE {
			// Not a refusal: applied by the other nodes, tried again here.
			return fmt.Errorf("read %s chunk %d: %s", what, s, incidentlib.ErrorMessage(err))
		}
		if err != nil {
			return err
		}
		var w Write
		if err := decodeWrite(data, &w); err != nil || w.Op != op {
			return incidentlib.Errorf(incidentlib.EINVALID, "%s commit %d names message %d, which is no %s chunk", what, seq, s, what)
		}
		add(&w)
	}
	return nil
}
