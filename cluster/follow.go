package cluster

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strconv"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"

	"github.com/incidentlib/incidentlib"
)

// A node follows the log from its own server's copy of the stream: the
// stream allows direct gets, which every replica answers from its own
// store (only committed messages are in it), and a request from the
// node's in-process connection is answered by its own server first. No
// consumer is involved: an ordered consumer is an ephemeral consumer on
// one server the cluster picks, and when that server stops answering
// (SIGSTOP, a cut link) the consumer must be made again through the
// cluster's meta leader, which may place it on the silent server again;
// a node then stopped applying the log for minutes while the two others
// kept a quorum. The node asks its copy again when told a write is in the
// log (the bell, below), and every pollEvery otherwise.

// The bell: a node that had a write acknowledged publishes the write's
// sequence on BellSubject (plain NATS, not in the stream), so that every
// node's follower asks its copy at once rather than at its next poll.
const BellSubject = "incidentlib.bell"

const (
	// fetchBatch is how many messages one direct get returns at most.
	fetchBatch = 256
	// pollEvery is how often a follower asks its copy without a bell.
	pollEvery = 250 * time.Millisecond
	// fetchBytes bounds the bytes one direct get returns, well below a
	// subscription's pending limit (64 MiB).
	fetchBytes = 16 << 20
	// fetchTimeout bounds one direct get's answer.
	fetchTimeout = 2 * time.Second
	// maxBackoff bounds the wait between asks while a write known to be
	// in the log has not reached this node's copy yet.
	maxBackoff = 50 * time.Millisecond
)

// Nudge tells the follower that the log holds a write at seq: it asks its
// copy until it has applied seq.
func (n *Node) Nudge(seq uint64) {
	for {
		cur := n.want.Load()
		if seq <= cur || n.want.CompareAndSwap(cur, seq) {
			break
		}
	}
	select {
	case n.bell <- struct{}{}:
	default:
	}
}

// bellDelay is how long a node that hears another node's bell waits
// before it asks its copy: the writes that come meanwhile are read and
// applied together (one transaction, one fsync), and the node that
// acknowledged the write, whose client waits for its apply, has the disk
// first. This node's own writes (Nudge) and the writes it must judge
// (catchUp) are asked for at once.
const bellDelay = 10 * time.Millisecond

// hear takes another node's bell: the follower asks its copy for seq
// within bellDelay. The bell of this node's own write (ring) was Nudged
// already.
func (n *Node) hear(seq uint64) {
	for {
		cur := n.heard.Load()
		if seq <= cur || n.heard.CompareAndSwap(cur, seq) {
			break
		}
	}
	if seq <= n.want.Load() || !n.hearing.CompareAndSwap(false, true) {
		return // known, or a Nudge within bellDelay already set
	}
	time.AfterFunc(bellDelay, func() {
		n.hearing.Store(false)
		n.Nudge(n.heard.Load())
	})
}

// ring tells every node, this one too, that the log holds a write at seq.
func (n *Node) ring(seq uint64) {
	n.Nudge(seq)
	_ = n.nc.Publish(BellSubject, strconv.AppendUint(nil, seq, 10))
}

// Follow hands every message of the stream after from, in order, to
// apply, until ctx ends: what each read of this node's own copy of the
// stream (direct gets) returned, at most fetchBatch messages and
// fetchBytes at once, so that apply may write them together. It starts
// again after the last messages handed over when a read fails. An error
// from apply stops Follow and is returned.
func (n *Node) Follow(ctx context.Context, from uint64, apply func(context.Context, []Message) error) error {
	for {
		err := n.follow(ctx, &from, apply)
		if ctx.Err() != nil {
			return nil
		}
		var stop stopError
		if errors.As(err, &stop) {
			return stop.err
		}
		if err != nil {
			n.log.Debug("the log's reader starts again", "after", from, "err", err)
		}
		select {
		case <-ctx.Done():
			return nil
		case <-time.After(pollEvery):
		}
	}
}

// stopError is an error of the apply function: Follow stops.
type stopError struct{ err error }

func (e stopError) Error() string { return e.err.Error() }

func (n *Node) follow(ctx context.Context, from *uint64, apply func(context.Context, []Message) error) error {
	if _, err := n.ensureStream(ctx); err != nil {
		return err
	}
	sub, err := n.nc.Subscribe(BellSubject, func(m *nats.Msg) {
		if seq, err := strconv.ParseUint(string(m.Data), 10, 64); err == nil {
			n.hear(seq)
		}
	})
	if err != nil {
		return err
	}
	defer func() { _ = sub.Unsubscribe() }()
	// One subscription for every fetch's answers, each fetch on its own
	// reply subject under it: no subscription made and dropped (and told
	// to every peer) at each ask.
	replies := &fetchReplies{prefix: n.nc.NewInbox()}
	if replies.sub, err = n.nc.SubscribeSync(replies.prefix + ".*"); err != nil {
		return err
	}
	defer func() { _ = replies.sub.Unsubscribe() }()
	// While a batch is applied (its transaction's commit and fsync), the
	// next one is read: the log's reading and its applying overlap, and
	// the writes that arrive meanwhile make the next batch, not wait for
	// an ask after the commit. At most one read is ahead (two batches in
	// memory, 2 × fetchBytes).
	var ahead chan fetched
	defer func() {
		if ahead != nil {
			<-ahead // before the replies' subscription goes (bounded by fetchTimeout)
		}
	}()
	var backoff time.Duration
	for {
		var msgs []Message
		var err error
		if ahead != nil {
			f := <-ahead
			ahead, msgs, err = nil, f.msgs, f.err
		} else {
			msgs, err = n.fetch(ctx, replies, *from+1)
		}
		if len(msgs) > 0 {
			if err == nil {
				ahead = make(chan fetched, 1)
				go func(out chan<- fetched, seq uint64) {
					m, err := n.fetch(ctx, replies, seq)
					out <- fetched{m, err}
				}(ahead, msgs[len(msgs)-1].Seq+1)
			}
			if err := apply(ctx, msgs); err != nil {
				return stopError{err}
			}
			*from = msgs[len(msgs)-1].Seq
		}
		if err != nil {
			return err
		}
		if got := len(msgs); got > 0 {
			backoff = 0
			continue
		}
		wait := pollEvery
		if n.want.Load() > *from {
			// A write is in the log but not yet in this node's copy (its
			// replica commits it a moment later): ask again soon.
			backoff = min(max(2*backoff, time.Millisecond), maxBackoff)
			wait = backoff
		} else {
			backoff = 0
		}
		select {
		case <-ctx.Done():
			return nil
		case <-n.bell:
		case <-time.After(wait):
		}
	}
}

// fetched is what a read ahead of the apply returned.
type fetched struct {
	msgs []Message
	err  error
}

// fetchReplies is where a follower's fetches are answered: one
// subscription, and a reply subject per fetch under its prefix.
type fetchReplies struct {
	prefix string
	sub    *nats.Subscription
	n      uint64 // fetches made
}

// fetch asks this node's copy of the stream for the messages from seq on
// (at most fetchBatch) and returns them, in order, with the error that
// ended the read early, if any (the messages before it are good). No
// message at or after seq is no error. Answers to an earlier fetch that
// came too late are skipped.
func (n *Node) fetch(ctx context.Context, replies *fetchReplies, seq uint64) ([]Message, error) {
	req, _ := json.Marshal(struct {
		Seq      uint64 `json:"seq"`
		Batch    int    `json:"batch"`
		MaxBytes int    `json:"max_bytes"`
	}{seq, fetchBatch, fetchBytes})
	replies.n++
	reply := replies.prefix + "." + strconv.FormatUint(replies.n, 10)
	if err := n.nc.PublishRequest("$JS.API.DIRECT.GET."+n.cfg.Stream, reply, req); err != nil {
		return nil, err
	}
	ctx, cancel := context.WithTimeout(ctx, fetchTimeout)
	defer cancel()
	var got []Message
	for {
		m, err := replies.sub.NextMsgWithContext(ctx)
		if err != nil {
			if len(got) > 0 && errors.Is(err, context.DeadlineExceeded) {
				return got, nil // the rest at the next ask
			}
			return got, err
		}
		if m.Subject != reply {
			continue // an earlier fetch's, late
		}
		if d, _ := replies.sub.Dropped(); d > 0 {
			// A message dropped (the subscription's pending limit): what
			// follows would skip it.
			return got, fmt.Errorf("direct get of %d: %d answers dropped", seq, d)
		}
		switch status := m.Header.Get("Status"); status {
		case "":
		case "204", "404": // the end of the batch; nothing at or after seq
			return got, nil
		default:
			return got, fmt.Errorf("direct get of %d: %s %s", seq, status, m.Header.Get("Description"))
		}
		s, err := strconv.ParseUint(m.Header.Get(jetstream.SequenceHeader), 10, 64)
		// Sequences follow on one another within a batch; only its first
		// may skip what the stream no longer holds (purged below a
		// snapshot).
		if err != nil || s < seq || len(got) > 0 && s != seq {
			return got, fmt.Errorf("direct get of %d: a message with sequence %q", seq, m.Header.Get(jetstream.SequenceHeader))
		}
		msg := Message{Seq: s, Subject: m.Header.Get(jetstream.SubjectHeader), MsgID: m.Header.Get(jetstream.MsgIDHeader), Header: m.Header, Data: m.Data}
		got = append(got, msg)
		seq = s + 1
	}
}

// localSubjectSeq returns the sequence of the last message on subject in
// this node's own copy of the stream (0: none there), a direct get its
// server answers without asking the leader: a guess that may be behind
// the leader's, which a publish expecting it confirms (the stream refuses
// it otherwise, and the writer asks the leader, SubjectSeq).
func (n *Node) localSubjectSeq(ctx context.Context, subject string) (uint64, error) {
	req, _ := json.Marshal(struct {
		LastBySubject string `json:"last_by_subj"`
	}{subject})
	ctx, cancel := context.WithTimeout(ctx, attemptTimeout)
	defer cancel()
	m, err := n.nc.RequestWithContext(ctx, "$JS.API.DIRECT.GET."+n.cfg.Stream, req)
	if err != nil {
		return 0, err
	}
	switch status := m.Header.Get("Status"); status {
	case "":
	case "404":
		return 0, nil
	default:
		return 0, fmt.Errorf("direct get of the last of %s: %s %s", subject, status, m.Header.Get("Description"))
	}
	return strconv.ParseUint(m.Header.Get(jetstream.SequenceHeader), 10, 64)
}

// SubjectSeq returns the sequence of the last message on subject (0:
// none), from the stream's leader, never from a replica that may be
// behind: UNAVAILABLE without a quorum.
func (n *Node) SubjectSeq(ctx context.Context, subject string) (uint64, error) {
	ctx, cancel := context.WithTimeout(ctx, n.cfg.WriteTimeout)
	defer cancel()
	if _, err := n.ensureStream(ctx); err != nil {
		n.quorum.set(false)
		return 0, incidentlib.Errorf(incidentlib.EUNAVAILABLE, "the cluster is unavailable: %v; nothing was written", err)
	}
	req, _ := json.Marshal(struct {
		LastBySubject string `json:"last_by_subj"`
	}{subject})
	var resp *nats.Msg
	err := n.retryTimeouts(ctx, func(ctx context.Context) (err error) {
		resp, err = n.nc.RequestWithContext(ctx, "$JS.API.STREAM.MSG.GET."+n.cfg.Stream, req)
		return err
	})
	if err != nil {
		n.quorum.set(false)
		return 0, incidentlib.Errorf(incidentlib.EUNAVAILABLE, "the cluster is unavailable: %v; nothing was written", err)
	}
	var out struct {
		Message *struct {
			Seq uint64 `json:"seq"`
		} `json:"message"`
		Error *jetstream.APIError `json:"error"`
	}
	if err := json.Unmarshal(resp.Data, &out); err != nil {
		return 0, incidentlib.Errorf(incidentlib.EUNAVAILABLE, "the cluster's answer was not understood: %v; nothing was written", err)
	}
	switch {
	case out.Error != nil && out.Error.ErrorCode == jetstream.JSErrCodeMessageNotFound:
		return 0, nil
	case out.Error != nil:
		n.quorum.set(false)
		return 0, incidentlib.Errorf(incidentlib.EUNAVAILABLE, "the cluster is unavailable: %s; nothing was written", out.Error.Description)
	case out.Message == nil:
		return 0, incidentlib.Errorf(incidentlib.EUNAVAILABLE, "the cluster gave no answer; nothing was written")
	}
	return out.Message.Seq, nil
}
