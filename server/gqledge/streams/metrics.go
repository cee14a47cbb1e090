package streams

import (
	"github.com/prometheus/client_golang/prometheus"

	"github.com/incidentlib/incidentlib/live"
)

// liveMetrics are the subscriptions' metrics.
type liveMetrics struct {
	active  *prometheus.GaugeVec
	sent    *prometheus.CounterVec
	refused *prometheus.CounterVec
}

func newLiveMetrics(reg prometheus.Registerer, hub *live.Hub) (*liveMetrics, error) {
	m := &liveMetrics{
		active: prometheus.NewGaugeVec(prometheus.GaugeOpts{
			Name: "incidentlib_subscriptions_active",
			Help: "GraphQL subscriptions streaming now, by transport (sse, ws).",
		}, []string{"transport"}),
		sent: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "incidentlib_subscription_events_sent_total",
			Help: "Subscription events written to clients, by transport (sse, ws).",
		}, []string{"transport"}),
		refused: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "incidentlib_subscriptions_refused_total",
			Help: "Subscriptions refused before any event, by code.",
		}, []string{"code"}),
	}
	cs := []prometheus.Collector{m.active, m.sent, m.refused}
	for _, r := range []live.Reason{live.ReasonSlow, live.ReasonError, live.ReasonShutdown} {
		cs = append(cs, prometheus.NewCounterFunc(prometheus.CounterOpts{
			Name:        "incidentlib_subscriptions_dropped_total",
			Help:        "Subscriptions the server ended, by reason: slow (fell behind its buffer), error (the change log could not be read), shutdown.",
			ConstLabels: prometheus.Labels{"reason": r.String()},
		}, func() float64 { return float64(hub.Stats().Dropped[r.String()]) }))
	}
	for _, c := range cs {
		if err := reg.Register(c); err != nil {
			return nil, err
		}
	}
	for _, t := range []string{"sse", "ws"} {
		m.active.WithLabelValues(t)
		m.sent.WithLabelValues(t)
	}
	return m, nil
}
