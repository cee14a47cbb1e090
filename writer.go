package incidentlib

// Writer is every write of the library, in one interface: the incidents'
// writes and the history's (restore, review, withdrawal, purge), the
// imports with and without history, the API tokens, the taxonomy, the
// organizations and the glossary. It is the write side: the server and the GraphQL
// resolver take it as one value beside the reads, never a union filled
// with one store, never a capability found by type assertion. Two types
// implement it, each asserted at compile time beside its declaration:
// storage.Writer (a store alone writes its own file: each write forwarded
// to the store's room that holds it) and cluster.Writer (a
// cluster node writes through the cluster's log, and every node's store
// applies the write). A write added to the library is added here, so
// that both must carry it (docs/design.md, "The write side").
type Writer interface {
	IncidentWriter
	HistoryImporter
	TokenIssuer
	TaxonomyWriter
}
