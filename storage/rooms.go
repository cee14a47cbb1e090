package storage

// The store's rooms. *DB opens and closes the file; what it holds is read
// and written through one room per aggregate, each a small value over the
// DB, each implementing its root interfaces with their assertions beside
// its declaration (rooms_test.go checks that every root interface the
// store implements is implemented by exactly one room):
//
//	room          declared in      files
//	Incidents     incidents.go     query.go relatedby.go similar.go sets.go stats.go durations.go dense.go
//	                               snapshot.go readpath.go listed.go match.go order.go keys.go records.go
//	                               changes.go apply.go followpos.go links.go linkstatus.go
//	                               mutate.go write.go writeindex.go writecheck.go workflow.go merge.go contentauthors.go
//	                               import.go importbatch*.go importcheck.go importdraft.go
//	Versions      versions.go      history.go historyread.go historydiff.go historycheck.go
//	                               versionlog.go historyimport.go
//	Tokens        tokens.go        tokens.go
//	Taxonomies    taxonomies.go    taxonomy.go taxadmin.go taxreplay.go orgs.go orgadmin.go glossary.go
//	ClusterLog    clusterlog.go    cluster.go
//	Maintenance   maintenance.go   check.go compact.go walk.go cold.go purge.go migrate.go fault*.go
//
// db.go opens the file (Options, Open, Close) and holds what every room
// shares: the bucket names and the record cache; tx.go the read and
// write transactions (view, writable, update). Three values stand for more than one
// room, each forwarding every method to its room by name (writer.go,
// reads.go, follower.go): Writer, the library's write side
// (incidentlib.Writer); Reads, every read the server takes (server.Reads);
// Follower, what a replica's follower writes (replica.Store).

// Incidents is the room of the incidents, their indexes and change log.
func (db *DB) Incidents() Incidents { return Incidents{db: db} }

// Versions is the room of the incidents' history.
func (db *DB) Versions() Versions { return Versions{db: db} }

// Tokens is the room of the API tokens.
func (db *DB) Tokens() Tokens { return Tokens{db: db} }

// Taxonomies is the room of the taxonomy and the organizations.
func (db *DB) Taxonomies() Taxonomies { return Taxonomies{db: db} }

// ClusterLog is the room of the cluster log's position.
func (db *DB) ClusterLog() ClusterLog { return ClusterLog{db: db} }

// Maintenance is the room of the operator's work on the file.
func (db *DB) Maintenance() Maintenance { return Maintenance{db: db} }

// storeValues are the rooms and the values that forward to them, whose
// methods a refused write names as the store's (writeMethod).
var storeValues = map[string]bool{
	"Incidents": true, "Versions": true, "Tokens": true, "Taxonomies": true, "ClusterLog": true, "Maintenance": true,
	"Writer": true, "Reads": true, "Follower": true,
}
