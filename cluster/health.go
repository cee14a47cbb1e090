package cluster

import (
	"net/http"
	"sync/atomic"
	"time"
)

// health is what this node's embedded NATS server last said of its
// JetStream: NATS's own health check, the one its documentation gives for
// rolling restarts. It fails while the meta group is not current, or while
// the stream's copy on this server (or a consumer's) is catching up or
// behind its group. Such a copy cannot stand in for a lost leader: NATS
// refuses to elect with a vote from a copy that holds no state yet, and a
// copy still fetching the stream's messages from the leader needs that
// leader. While any node is not healthy, stopping another can leave the
// stream without a quorum until it comes back.
type health struct {
	ok atomic.Bool
}

// Healthy reports whether this node's embedded server was healthy when
// last asked (Member asks every second); with an existing NATS, whose
// servers are the operator's, always true.
func (n *Node) Healthy() bool { return n.srv == nil || n.health.ok.Load() }

// checkHealth asks the embedded server's health check now, keeps the
// answer and logs a change to unhealthy (with NATS's reason) or back.
func (n *Node) checkHealth() bool {
	if n.srv == nil {
		return true
	}
	h := n.srv.Healthz(nil)
	ok := h.StatusCode == http.StatusOK
	if was := n.health.ok.Swap(ok); was != ok {
		if ok {
			n.log.Info("the embedded NATS server's JetStream is healthy: its copy of the stream is current")
		} else {
			n.log.Warn("the embedded NATS server's JetStream is not healthy: its copy of the stream cannot stand in for a lost leader until it is", "reason", h.Error)
		}
	}
	return ok
}

// WatchHealth asks the embedded server's health check every interval
// until the node closes; Healthy reads the answer.
func (n *Node) WatchHealth(interval time.Duration) {
	if n.srv == nil {
		return
	}
	go func() {
		t := time.NewTicker(interval)
		defer t.Stop()
		for {
			n.checkHealth()
			select {
			case <-n.quorum.done:
				return
			case <-t.C:
			}
		}
	}()
}
