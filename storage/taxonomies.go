package storage

import "github.com/incidentlib/incidentlib"

// Taxonomies is the store's room of the taxonomy and the organizations:
// their reads, their administration (terms, aliases, deprecations,
// organizations added, renamed and merged), the taxonomy's change log and
// its application on a follower. DB.Taxonomies returns it; it is not named
// Taxonomy because that is its first method's name
// (incidentlib.TaxonomyService).
type Taxonomies struct {
	db *DB
}

var (
	_ incidentlib.TaxonomyService       = Taxonomies{}
	_ incidentlib.OrganizationService   = Taxonomies{}
	_ incidentlib.TaxonomyAdmin         = Taxonomies{}
	_ incidentlib.TaxonomyWriter        = Taxonomies{}
	_ incidentlib.TaxonomyHistoryReader = Taxonomies{}
	_ incidentlib.TaxonomyLog           = Taxonomies{}
	_ incidentlib.TaxonomyApplier       = Taxonomies{}
	_ incidentlib.GlossaryReader        = Taxonomies{} // glossary.go
)
