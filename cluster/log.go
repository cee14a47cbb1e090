package cluster

import (
	"context"
	"errors"
	"strconv"
	"sync"
	"sync/atomic"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"

	"github.com/incidentlib/incidentlib"
)

// The stream's subjects: one per incident, so that the stream's expected
// last sequence per subject orders the writes of one incident, and one
// for the writes of the whole library (imports, snapshots, admin).
const (
	subjectPrefix = "incidentlib.w."
	// SubjectLibrary is the subject of writes that are not one
	// incident's.
	SubjectLibrary = subjectPrefix + "library"
)

// IncidentSubject is the subject of the writes of incident id.
func IncidentSubject(id string) string { return subjectPrefix + "incident." + id }

// ensureStream finds the stream of writes or creates it: file storage,
// Replicas copies (at most the members of an embedded cluster), the
// dedupe window, messages kept for ever.
func (n *Node) ensureStream(ctx context.Context) (jetstream.Stream, error) {
	n.streamMu.Lock()
	defer n.streamMu.Unlock()
	if n.stream != nil {
		return n.stream, nil
	}
	replicas := n.cfg.Replicas
	sc := jetstream.StreamConfig{
		Name:        n.cfg.Stream,
		Description: "incidentlib: every write of the library, in order",
		Subjects:    []string{subjectPrefix + ">"},
		Storage:     jetstream.FileStorage,
		Replicas:    replicas,
		Duplicates:  n.cfg.DedupeWindow,
		// Every replica answers direct gets from its own copy: a node
		// follows the log from its own server (follow.go), not from a
		// consumer on another server that may be gone.
		AllowDirect: true,
		MaxMsgSize:  MaxMessageBytes,
		Retention:   jetstream.LimitsPolicy,
		Discard:     jetstream.DiscardNew,
		// A purge of a version erases the messages that hold its text
		// (erase.go); nothing else deletes a message.
		DenyDelete: false,
		DenyPurge:  false, // a snapshot's sequence lets an operator purge below it
	}
	s, err := n.js.Stream(ctx, n.cfg.Stream)
	if errors.Is(err, jetstream.ErrStreamNotFound) {
		s, err = n.js.CreateStream(ctx, sc)
		if errors.Is(err, jetstream.ErrStreamNameAlreadyInUse) {
			s, err = n.js.Stream(ctx, n.cfg.Stream)
		}
	}
	if err == nil && !s.CachedInfo().Config.AllowDirect {
		// A stream made by an earlier release: direct gets are turned on.
		// (Its deny_delete stays: NATS refuses to lift it; erase.go.)
		cfg := s.CachedInfo().Config
		cfg.AllowDirect = true
		s, err = n.js.UpdateStream(ctx, cfg)
	}
	if err != nil {
		return nil, err
	}
	n.stream = s
	return s, nil
}

// Message is a message of the stream as the apply function gets it.
type Message struct {
	Seq     uint64
	Subject string
	// MsgID is the write's idempotency key.
	MsgID  string
	Header nats.Header
	Data   []byte
}

// Publish publishes data on subject with the idempotency key msgID and,
// when expect is not nil, the condition that the last message on subject
// has that sequence (0: none). It returns the message's sequence and
// whether the stream had it already (a retry within the dedupe window).
// Errors: UNAVAILABLE when the stream could not take the message and
// nothing will happen (no quorum or leader, not connected); CONFLICT when
// the subject moved past expect; OUTCOME_UNKNOWN when the acknowledgement
// did not come within the write timeout (the write may still apply).
func (n *Node) Publish(ctx context.Context, subject, msgID string, expect *uint64, header nats.Header, data []byte) (uint64, bool, error) {
	if !n.nc.IsConnected() {
		return 0, false, incidentlib.Errorf(incidentlib.EUNAVAILABLE, "the cluster is unavailable: this node is not connected to NATS; nothing was written")
	}
	if len(data) > MaxMessageBytes-4096 {
		return 0, false, incidentlib.Errorf(incidentlib.EINVALID, "the write is %d bytes, above the log's limit of %d", len(data), MaxMessageBytes-4096)
	}
	msg := nats.NewMsg(subject)
	msg.Data = data
	for k, v := range header {
		msg.Header[k] = v
	}
	opts := []jetstream.PublishOpt{jetstream.WithMsgID(msgID), jetstream.WithExpectStream(n.cfg.Stream)}
	if expect != nil {
		opts = append(opts, jetstream.WithExpectLastSequencePerSubject(*expect))
	}
	var ack *jetstream.PubAck
	err := n.retryTimeouts(ctx, func(ctx context.Context) (err error) {
		// A retry carries the same message id: if an earlier try was
		// stored after all, the stream answers it as a duplicate.
		ack, err = n.js.PublishMsg(ctx, msg, opts...)
		return err
	})
	if err != nil {
		return 0, false, n.publishError(err)
	}
	n.quorum.set(true)
	n.ring(ack.Sequence)
	return ack.Sequence, ack.Duplicate, nil
}

// attemptTimeout bounds one request to the stream's leader within the
// write timeout: while the leader is lost, a request waits for an answer
// nobody sends (the stream's other servers hear it but do not lead), so
// it is sent again every attempt until a new leader answers or the write
// timeout passes, rather than once for the whole write timeout.
const attemptTimeout = 500 * time.Millisecond

// retryTimeouts runs fn with a deadline of attemptTimeout, again while it
// times out, until the write timeout passes (or ctx ends); it returns
// fn's last error. fn must be safe to repeat (a publish with its message
// id, a read).
func (n *Node) retryTimeouts(ctx context.Context, fn func(context.Context) error) error {
	ctx, cancel := context.WithTimeout(ctx, n.cfg.WriteTimeout)
	defer cancel()
	for {
		actx, acancel := context.WithTimeout(ctx, attemptTimeout)
		err := fn(actx)
		acancel()
		if inProcess(err) && ctx.Err() == nil {
			// An earlier try of this publish is being stored: its answer
			// (a duplicate's) comes once it is.
			select {
			case <-ctx.Done():
			case <-time.After(20 * time.Millisecond):
			}
			continue
		}
		if err == nil || ctx.Err() != nil || !(errors.Is(err, context.DeadlineExceeded) || errors.Is(err, nats.ErrTimeout)) {
			if err != nil && ctx.Err() != nil && !errors.Is(err, context.Canceled) {
				return context.DeadlineExceeded // the write timeout, not one attempt's
			}
			return err
		}
	}
}

// errCodeDuplicateInProcess is JetStream's answer to a publish whose
// message id an earlier publish, not yet stored, carries.
const errCodeDuplicateInProcess jetstream.ErrorCode = 10158

func inProcess(err error) bool {
	var apiErr *jetstream.APIError
	return errors.As(err, &apiErr) && apiErr.ErrorCode == errCodeDuplicateInProcess
}

// publishError maps a failed publish to what the client is told.
func (n *Node) publishError(err error) error {
	var apiErr *jetstream.APIError
	switch {
	case errors.As(err, &apiErr) && (apiErr.ErrorCode == jetstream.JSErrCodeStreamWrongLastSequence ||
		apiErr.ErrorCode == jetstream.JSErrCodeStreamWrongLastSequenceConstant):
		return incidentlib.Errorf(incidentlib.ECONFLICT, "the incident was changed by another write meanwhile")
	case errors.Is(err, jetstream.ErrNoStreamResponse), errors.Is(err, nats.ErrNoResponders), errors.Is(err, nats.ErrConnectionClosed),
		errors.Is(err, nats.ErrDisconnected), errors.Is(err, nats.ErrConnectionReconnecting):
		n.quorum.set(false)
		return incidentlib.Errorf(incidentlib.EUNAVAILABLE, "the cluster is unavailable (%v); nothing was written", err)
	case errors.Is(err, context.DeadlineExceeded), errors.Is(err, nats.ErrTimeout), inProcess(err):
		n.quorum.set(false)
		return incidentlib.Errorf(incidentlib.EOUTCOMEUNKNOWN,
			"the cluster did not acknowledge the write within %s: it may still apply; retry with the same idempotency key", n.cfg.WriteTimeout)
	case errors.Is(err, context.Canceled):
		return incidentlib.Errorf(incidentlib.EOUTCOMEUNKNOWN, "the request ended before the cluster acknowledged the write: it may still apply")
	case errors.As(err, &apiErr):
		return incidentlib.Errorf(incidentlib.EUNAVAILABLE, "the cluster refused the write (%s); nothing was written", apiErr.Description)
	}
	return incidentlib.Errorf(incidentlib.EOUTCOMEUNKNOWN, "the write's outcome is unknown: %v", err)
}

// LastSeq returns the stream's last sequence, as its leader knows it (a
// request that needs a quorum): UNAVAILABLE without one.
func (n *Node) LastSeq(ctx context.Context) (uint64, error) {
	ctx, cancel := context.WithTimeout(ctx, n.cfg.WriteTimeout)
	defer cancel()
	stream, err := n.ensureStream(ctx)
	if err != nil {
		n.quorum.set(false)
		return 0, incidentlib.Errorf(incidentlib.EUNAVAILABLE, "the cluster is unavailable: %v", err)
	}
	info, err := stream.Info(ctx)
	if err != nil {
		n.quorum.set(false)
		return 0, incidentlib.Errorf(incidentlib.EUNAVAILABLE, "the cluster is unavailable: %v", err)
	}
	n.quorum.set(info.Cluster == nil || info.Cluster.Leader != "")
	leader := info.Cluster != nil && info.Cluster.Leader == n.cfg.NodeName
	// With an existing NATS (no embedded server) the stream's copies are
	// the operator's servers', not this node's: nothing to wait for.
	current := info.Cluster == nil || leader || n.srv == nil
	if info.Cluster != nil {
		for _, p := range info.Cluster.Replicas {
			if p != nil && p.Name == n.cfg.NodeName && p.Current {
				current = true
			}
		}
	}
	n.leader.Store(leader)
	n.current.Store(current)
	n.metrics.setLeader(leader)
	n.Nudge(info.State.LastSeq)
	return info.State.LastSeq, nil
}

// quorum tracks whether the node's last exchange with the stream's leader
// succeeded, and a watcher asks again every second. It is the node's one
// quorum state: the stale mark (Member.Stale), the gauge
// incidentlib_cluster_quorum (read at scrape time, Metrics) and the
// readiness report all read it, and nothing copies it: a copy fed by a
// callback outside the lock once took two changes close together in the
// opposite order and kept the gauge at 0 on a healthy node.
type quorum struct {
	mu      sync.Mutex
	ok      bool
	okNow   atomic.Bool // ok, read by every request without the lock
	known   bool
	changed chan struct{}
	done    chan struct{}
}

func (q *quorum) init() {
	q.changed = make(chan struct{})
	q.done = make(chan struct{})
}

func (q *quorum) set(ok bool) {
	q.mu.Lock()
	defer q.mu.Unlock()
	moved := !q.known || q.ok != ok
	q.ok, q.known = ok, true
	q.okNow.Store(ok)
	if moved {
		close(q.changed)
		q.changed = make(chan struct{})
	}
}

func (q *quorum) stop() {
	q.mu.Lock()
	defer q.mu.Unlock()
	select {
	case <-q.done:
	default:
		close(q.done)
	}
}

// Quorum reports whether the node last reached the stream's leader.
func (n *Node) Quorum() bool { return n.quorum.okNow.Load() }

// WatchQuorum asks the stream's leader every interval until the node
// closes; Quorum reads the answer.
func (n *Node) WatchQuorum(interval time.Duration) {
	go func() {
		t := time.NewTicker(interval)
		defer t.Stop()
		for {
			ctx, cancel := context.WithTimeout(context.Background(), min(interval*2, n.cfg.WriteTimeout))
			_, _ = n.LastSeq(ctx)
			cancel()
			select {
			case <-n.quorum.done:
				return
			case <-t.C:
			}
		}
	}()
}

// headerInt reads an integer header, 0 when absent or bad.
func headerInt(h nats.Header, key string) int {
	v, _ := strconv.Atoi(h.Get(key))
	return v
}

// Leader reports whether this node's server led the stream when last
// asked.
func (n *Node) Leader() bool { return n.leader.Load() }

// GetMsg returns the data of the message at seq, from the stream's
// leader.
func (n *Node) GetMsg(ctx context.Context, seq uint64) ([]byte, error) {
	stream, err := n.ensureStream(ctx)
	if err != nil {
		return nil, incidentlib.Errorf(incidentlib.EUNAVAILABLE, "the cluster is unavailable: %v", err)
	}
	m, err := stream.GetMsg(ctx, seq)
	if errors.Is(err, jetstream.ErrMsgNotFound) {
		return nil, incidentlib.Errorf(incidentlib.EINVALID, "the log holds no message %d", seq)
	}
	if err != nil {
		return nil, incidentlib.Errorf(incidentlib.EUNAVAILABLE, "the cluster is unavailable: %v", err)
	}
	return m.Data, nil
}

// Current reports whether this node's server held a current copy of the
// stream (or led it) when last asked: with it, the node can stand in for
// a lost leader.
func (n *Node) Current() bool { return n.current.Load() }
