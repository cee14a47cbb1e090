package cluster

import (
	"sync/atomic"
	"time"

	"github.com/prometheus/client_golang/prometheus"
)

// Metrics are the cluster's figures on /metrics. A nil *Metrics records
// nothing.
type Metrics struct {
	appliedSeq prometheus.Gauge
	quorum     prometheus.GaugeFunc
	healthy    prometheus.GaugeFunc
	apply      prometheus.Histogram
	batch      prometheus.Histogram
	newer      prometheus.Gauge
	rejects    prometheus.Counter
	leader     prometheus.Gauge
	// node is the node whose quorum the gauge reads at scrape time (nil:
	// none yet, 0).
	node atomic.Pointer[Node]
}

// NewMetrics registers the cluster's metrics with reg.
func NewMetrics(reg prometheus.Registerer) (*Metrics, error) {
	m := &Metrics{
		appliedSeq: prometheus.NewGauge(prometheus.GaugeOpts{Name: "incidentlib_cluster_applied_seq",
			Help: "The log position (stream sequence) this node's store has applied up to."}),
		apply: prometheus.NewHistogram(prometheus.HistogramOpts{Name: "incidentlib_cluster_apply_seconds",
			Help: "Time to apply one write of the log to this node's store, in seconds (a group's transaction shared among its writes).", Buckets: prometheus.ExponentialBuckets(0.0001, 4, 9)}),
		batch: prometheus.NewHistogram(prometheus.HistogramOpts{Name: "incidentlib_cluster_apply_batch_messages",
			Help: "Messages of the log applied in one transaction of this node's store (one commit and fsync for all of them).", Buckets: prometheus.ExponentialBuckets(1, 2, 9)}),
		newer: prometheus.NewGauge(prometheus.GaugeOpts{Name: "incidentlib_cluster_newer_version",
			Help: "1 when this node stopped applying the log at a write of a newer format or rule set: upgrade it."}),
		rejects: prometheus.NewCounter(prometheus.CounterOpts{Name: "incidentlib_cluster_rejected_total",
			Help: "Writes of the log the store refused at apply (recorded identically on every node)."}),
	}
	m.quorum = prometheus.NewGaugeFunc(prometheus.GaugeOpts{Name: "incidentlib_cluster_quorum",
		Help: "1 while this node reaches the stream's leader (writes can be acknowledged), else 0: reads are then marked stale."},
		func() float64 {
			if n := m.node.Load(); n != nil && n.Quorum() {
				return 1
			}
			return 0
		})
	m.healthy = prometheus.NewGaugeFunc(prometheus.GaugeOpts{Name: "incidentlib_cluster_jetstream_healthy",
		Help: "1 while this node's embedded NATS server reports its JetStream healthy (its copy of the stream current, nothing catching up), else 0: stop or restart another node only while every node shows 1."},
		func() float64 {
			if n := m.node.Load(); n != nil && n.Healthy() {
				return 1
			}
			return 0
		})
	m.leader = prometheus.NewGauge(prometheus.GaugeOpts{Name: "incidentlib_cluster_stream_leader",
		Help: "1 while this node's NATS server leads the stream of writes (its loss makes the others elect a new leader)."})
	for _, c := range []prometheus.Collector{m.appliedSeq, m.quorum, m.healthy, m.apply, m.batch, m.newer, m.rejects, m.leader} {
		if err := reg.Register(c); err != nil {
			return nil, err
		}
	}
	return m, nil
}

func (m *Metrics) setApplied(seq uint64) {
	if m != nil {
		m.appliedSeq.Set(float64(seq))
	}
}

// observeApply records one transaction of the store that applied n
// messages in d: each message's share of d, and n.
func (m *Metrics) observeApply(d time.Duration, n int) {
	if m != nil {
		for range n {
			m.apply.Observe(d.Seconds() / float64(n))
		}
		m.batch.Observe(float64(n))
	}
}

// watchQuorum makes the quorum gauge read node's quorum state (the one
// the stale mark reads) at each scrape: no copy to fall out of step.
func (m *Metrics) watchQuorum(node *Node) {
	if m != nil {
		m.node.Store(node)
	}
}

func (m *Metrics) setNewer(b bool) {
	if m != nil {
		v := 0.0
		if b {
			v = 1
		}
		m.newer.Set(v)
	}
}

func (m *Metrics) rejected() {
	if m != nil {
		m.rejects.Inc()
	}
}

func (m *Metrics) setLeader(b bool) {
	if m != nil {
		v := 0.0
		if b {
			v = 1
		}
		m.leader.Set(v)
	}
}
