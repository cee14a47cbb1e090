package storage

import (
	"context"

	"github.com/incidentlib/incidentlib"
)

// Follower is the store as a replica's follower writes it (replica.Store,
// asserted in cmd/incidentlib): the primary's changes and taxonomy
// applied and their positions, each forwarded by name to the incidents'
// or the taxonomy's room. DB.Follower returns it.
type Follower struct {
	incidents  Incidents
	taxonomies Taxonomies
}

// Follower is the store as a replica's follower writes it.
func (db *DB) Follower() Follower {
	return Follower{incidents: db.Incidents(), taxonomies: db.Taxonomies()}
}

func (x Follower) Path() string                              { return x.incidents.Path() }
func (x Follower) RecordRules() (*incidentlib.Taxonomy, int) { return x.incidents.RecordRules() }
func (x Follower) CountIncidents(ctx context.Context, f incidentlib.IncidentFilter) (int, error) {
	return x.incidents.CountIncidents(ctx, f)
}
func (x Follower) AppliedSeq(ctx context.Context) (seq uint64, following bool, err error) {
	return x.incidents.AppliedSeq(ctx)
}
func (x Follower) ApplyChanges(ctx context.Context, from uint64, changes []incidentlib.Change) (uint64, error) {
	return x.incidents.ApplyChanges(ctx, from, changes)
}
func (x Follower) AdvanceAppliedSeq(ctx context.Context, from, to uint64) (uint64, error) {
	return x.incidents.AdvanceAppliedSeq(ctx, from, to)
}
func (x Follower) AppliedTaxonomy(ctx context.Context) (uint64, error) {
	return x.taxonomies.AppliedTaxonomy(ctx)
}
func (x Follower) ApplyTaxonomyChanges(ctx context.Context, from uint64, changes []*incidentlib.TaxonomyChange) (uint64, error) {
	return x.taxonomies.ApplyTaxonomyChanges(ctx, from, changes)
}
func (x Follower) ApplyTaxonomyChangesThrough(ctx context.Context, from, through uint64, changes []*incidentlib.TaxonomyChange) (uint64, error) {
	return x.taxonomies.ApplyTaxonomyChangesThrough(ctx, from, through, changes)
}
