// Package clusternode composes what serve puts around a cluster node's
// store and handler, so that the program and its benchmark serve a node
// the same way: the store's reads beside the writes that go through the
// cluster's log, and the reader of the Idempotency-Key header.
package clusternode

import (
	"net/http"

	"github.com/incidentlib/incidentlib"
	"github.com/incidentlib/incidentlib/cluster"
	"github.com/incidentlib/incidentlib/server"
	"github.com/incidentlib/incidentlib/storage"
)

// Store is the store as a cluster node serves it: reads from the node's
// own store, every write through the cluster's log. The two halves are
// named fields, passed to server.Assemble as two values: no method of
// either is promoted, so no write of the store can stand in for one the
// writer lacks (incidentlib.Writer is the writer's whole contract, and
// the node's store refuses a write without a log position).
type Store struct {
	Reads  server.Reads
	Writes incidentlib.Writer
}

// NewStore returns the store of a node whose own store is db and whose
// writes go through w.
func NewStore(db *storage.DB, w *cluster.Writer) Store { return Store{Reads: db.Reads(), Writes: w} }

// The store's reads (storage.Reads) are the server's: the reads of a
// single node and of a cluster node alike. The store's write side
// (storage.Writer) is what the cluster's Applier writes on a node.
var (
	_ server.Reads  = storage.Reads{}
	_ cluster.Store = storage.Writer{}
	_ cluster.Reads = storage.Reads{}
)

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
