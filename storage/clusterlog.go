package storage

import "github.com/incidentlib/incidentlib"

// ClusterLog is the store's room of the cluster log's position: the
// position a cluster node's store has applied the log through, the writes
// it rejected, and the cluster library it belongs to (cluster.go).
// DB.ClusterLog returns it.
type ClusterLog struct {
	db *DB
}

var (
	_ incidentlib.LogApplier = ClusterLog{}
	_ incidentlib.LogGrouper = ClusterLog{} // loggroup.go
)
