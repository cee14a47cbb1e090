// Package clusternode composes what serve puts around a cluster node's
// store and handler, so that the program and its benchmark serve a node
// the same way: the store whose writes go through the cluster's log, and
// the reader of the Idempotency-Key header.
package clusternode

import (
	"net/http"

	"github.com/incidentlib/incidentlib/cluster"
	"github.com/incidentlib/incidentlib/server"
	"github.com/incidentlib/incidentlib/storage"
)

// Store is the store as a cluster node serves it: reads from the node's
// own store, writes through the cluster's log.
type Store struct {
	*cluster.Writer
	reads
}

// reads is the node's store one level down in Store: the writer's methods
// (every write: incidents, imports, history, tokens, taxonomy,
// organizations), promoted from a shallower depth, take the place of the
// store's own.
type reads struct{ *storage.DB }

var _ server.Store = Store{}

// NewStore returns the store of a node whose own store is db and whose
// writes go through w.
func NewStore(db *storage.DB, w *cluster.Writer) Store { return Store{Writer: w, reads: reads{db}} }

// IdempotencyKeys hands a request's Idempotency-Key header to the
// cluster's writer: a retry with the same key applies at most once. A key
// that is not 1 to 128 printable characters is refused with 400.
func IdempotencyKeys(h http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if k := r.Header.Get("Idempotency-Key"); k != "" {
			if why := cluster.ValidIdempotencyKey(k); why != "" {
				http.Error(w, why, http.StatusBadRequest)
				return
			}
			r = r.WithContext(cluster.WithIdempotencyKey(r.Context(), k))
		}
		h.ServeHTTP(w, r)
	})
}
