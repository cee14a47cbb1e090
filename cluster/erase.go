package cluster

import (
	"context"
	"encoding/hex"
	"encoding/json"
	"errors"
	"sync"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"

	"github.com/incidentlib/incidentlib"
)

// A purge erases the purged text from the log too. Applying a purge of
// version v of an incident, each node notes the write that made v: the
// message on the incident's subject, before the purge, whose record and
// time (Write.At, which the store took as the version's time) are v's.
// Once every member applied the log past the purge (a member that has
// not yet still needs the message), each node erases those messages with
// JetStream's secure delete (the message's bytes overwritten in the
// stream's files on every server); the first to do it wins, the others
// find nothing left. The store's own purge takes the text out of its
// versions; its file is cleared of it at its next compaction, and every
// snapshot after the purge is a backup of the store without it.

// appliedSubject is where the members ask each other how far they
// applied the log (plain NATS, not in the stream): an ask on
// <subject>.ask names a token, and each member answers
// {"node": name, "applied": seq} on <subject>.answer.<token>. Not a
// request with a reply: a node on an existing NATS may publish only
// where docs/cluster.md says.
func (n *Node) appliedSubject() string { return "incidentlib.applied." + n.cfg.Stream }

// eraseEvery is how often a node tries the erasures it still holds.
const eraseEvery = time.Second

// erasure is the erase a purge asks for: the writes on subject before
// the purge's position whose time is the purged version's.
type erasure struct {
	subject string
	at      time.Time
	before  uint64
}

// eraseQueue holds the erasures a node has still to make.
type eraseQueue struct {
	mu      sync.Mutex
	pending []erasure
}

func (q *eraseQueue) add(e erasure) {
	q.mu.Lock()
	q.pending = append(q.pending, e)
	q.mu.Unlock()
}

func (q *eraseQueue) take() []erasure {
	q.mu.Lock()
	defer q.mu.Unlock()
	p := q.pending
	q.pending = nil
	return p
}

// purge applies a purge (the message at seq) and, when the store purged
// the version, queues the erase of the writes that made it.
func (a *Applier) purge(ctx context.Context, seq uint64, w *Write) (*incidentlib.IncidentVersion, error) {
	out, err := a.store.PurgeVersion(ctx, w.ID, w.Version, w.Comment)
	if err != nil || a.node == nil || out == nil {
		return out, err
	}
	// Every version whose content the purge removed (the store purges
	// each version with the same content: storage/purge.go); a version's
	// entry keeps its time when its record is gone.
	versions := out.Purged
	if len(versions) == 0 {
		versions = []int{w.Version}
	}
	for _, ver := range versions {
		v, verr := a.store.IncidentVersion(ctx, w.ID, ver)
		if verr != nil || v == nil {
			continue
		}
		if at, perr := incidentlib.ParseTimestamp(v.At); perr == nil && !at.IsZero() {
			a.node.erasures.add(erasure{subject: IncidentSubject(w.ID), at: at, before: seq})
		}
	}
	return out, err
}

// answerApplied answers the members' asks of how far this node applied.
func (n *Node) answerApplied(applied func() uint64) (*nats.Subscription, error) {
	return n.nc.Subscribe(n.appliedSubject()+".ask", func(m *nats.Msg) {
		token := string(m.Data)
		if !validToken(token) {
			return
		}
		data, _ := json.Marshal(appliedAnswer{Node: n.cfg.NodeName, Applied: applied()})
		_ = n.nc.Publish(n.appliedSubject()+".answer."+token, data)
	})
}

// validToken reports whether an ask's token is one randomToken made.
func validToken(s string) bool {
	if len(s) != 64 {
		return false
	}
	_, err := hex.DecodeString(s)
	return err == nil
}

type appliedAnswer struct {
	Node    string `json:"node"`
	Applied uint64 `json:"applied"`
}

// allApplied reports whether every member applied the log up to seq:
// every server that holds a copy of the stream (the embedded servers are
// the nodes, by name) answered, and every answer is at seq or past it.
// With an existing NATS the members are the nodes that answer.
func (n *Node) allApplied(ctx context.Context, seq uint64) bool {
	stream, err := n.ensureStream(ctx)
	if err != nil {
		return false
	}
	info, err := stream.Info(ctx)
	if err != nil {
		return false
	}
	want := map[string]bool{}
	if info.Cluster != nil && n.srv != nil {
		if info.Cluster.Leader == "" {
			return false
		}
		want[info.Cluster.Leader] = true
		for _, p := range info.Cluster.Replicas {
			if p != nil {
				want[p.Name] = true
			}
		}
	}
	token := randomToken()
	sub, err := n.nc.SubscribeSync(n.appliedSubject() + ".answer." + token)
	if err != nil {
		return false
	}
	defer func() { _ = sub.Unsubscribe() }()
	if err := n.nc.Publish(n.appliedSubject()+".ask", []byte(token)); err != nil {
		return false
	}
	wctx, cancel := context.WithTimeout(ctx, 500*time.Millisecond)
	defer cancel()
	answered := 0
	for {
		m, err := sub.NextMsgWithContext(wctx)
		if err != nil {
			break
		}
		var a appliedAnswer
		if json.Unmarshal(m.Data, &a) != nil || a.Applied < seq {
			return false
		}
		delete(want, a.Node)
		answered++
	}
	return answered > 0 && len(want) == 0
}

// erase erases the messages of e from the stream, by secure delete.
func (n *Node) erase(ctx context.Context, e erasure) error {
	stream, err := n.ensureStream(ctx)
	if err != nil {
		return err
	}
	if stream.CachedInfo().Config.DenyDelete {
		// A stream made by an earlier release, which NATS keeps from
		// deleting a message for good (docs/cluster.md).
		n.log.Warn("a purged version's writes stay in the log: the stream denies deletes (made by an earlier release)", "subject", e.subject)
		return nil
	}
	for seq := uint64(1); seq < e.before; {
		m, err := stream.GetMsg(ctx, seq, jetstream.WithGetMsgSubject(e.subject))
		if errors.Is(err, jetstream.ErrMsgNotFound) {
			return nil
		}
		if err != nil {
			return err
		}
		if m.Sequence >= e.before {
			return nil
		}
		var w Write
		if decodeWrite(m.Data, &w) == nil && w.Record != nil && w.At.Equal(e.at) {
			if err := stream.SecureDeleteMsg(ctx, m.Sequence); err != nil {
				// Gone already (another node erased it first), or not.
				if _, gerr := stream.GetMsg(ctx, m.Sequence); !errors.Is(gerr, jetstream.ErrMsgNotFound) {
					return err
				}
			}
			n.log.Info("erased a purged version's write from the log", "seq", m.Sequence, "subject", e.subject)
		}
		seq = m.Sequence + 1
	}
	return nil
}

// eraseLoop makes the node's erasures once every member applied past
// their purges, until ctx ends; an erasure not yet possible waits.
func (n *Node) eraseLoop(ctx context.Context) {
	t := time.NewTicker(eraseEvery)
	defer t.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case <-t.C:
		}
		for _, e := range n.erasures.take() {
			ectx, cancel := context.WithTimeout(ctx, n.cfg.WriteTimeout)
			done := n.allApplied(ectx, e.before) && n.erase(ectx, e) == nil
			cancel()
			if !done {
				n.erasures.add(e)
			}
		}
	}
}
