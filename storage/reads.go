package storage

import (
	"context"
	"io"

	"github.com/RoaringBitmap/roaring/v2"

	"github.com/incidentlib/incidentlib"
)

// Reads is every read of the store the server takes (server.Reads, which
// it satisfies: cmd/internal/clusternode asserts it) as one value: each
// read forwarded by name to the room that holds it, never by embedding.
// DB.Reads returns it. The writes are not here: they are Writer. Its
// TaxonomyLog and HistoryLog are the REST API's feeds (server.Reads;
// server.Assemble names them in restapi.Deps).
type Reads struct {
	incidents   Incidents
	versions    Versions
	tokens      Tokens
	taxonomies  Taxonomies
	maintenance Maintenance
}

// The REST API's feeds (see Reads).
var (
	_ incidentlib.TaxonomyLog = Reads{}
	_ incidentlib.HistoryLog  = Reads{}
)

// Reads is the store's reads for the server.
func (db *DB) Reads() Reads {
	return Reads{incidents: db.Incidents(), versions: db.Versions(), tokens: db.Tokens(), taxonomies: db.Taxonomies(), maintenance: db.Maintenance()}
}

// incidentlib.IncidentService: the incidents' room.
func (x Reads) FindIncidentsByIDs(ctx context.Context, ids []string) ([]*incidentlib.Incident, error) {
	return x.incidents.FindIncidentsByIDs(ctx, ids)
}
func (x Reads) FindIncidents(ctx context.Context, f incidentlib.IncidentFilter, o incidentlib.IncidentOrder, p incidentlib.PageArgs) (*incidentlib.IncidentPage, error) {
	return x.incidents.FindIncidents(ctx, f, o, p)
}
func (x Reads) CountIncidents(ctx context.Context, f incidentlib.IncidentFilter) (int, error) {
	return x.incidents.CountIncidents(ctx, f)
}
func (x Reads) Facets(ctx context.Context, f incidentlib.IncidentFilter, kinds []incidentlib.TermKind) ([]incidentlib.Facet, error) {
	return x.incidents.Facets(ctx, f, kinds)
}
func (x Reads) Years(ctx context.Context, f incidentlib.IncidentFilter) ([]incidentlib.YearCount, error) {
	return x.incidents.Years(ctx, f)
}
func (x Reads) RecurrenceIDs(ctx context.Context, ids []string) ([][]string, error) {
	return x.incidents.RecurrenceIDs(ctx, ids)
}
func (x Reads) RelatedByIDs(ctx context.Context, ids []string) ([][]string, error) {
	return x.incidents.RelatedByIDs(ctx, ids)
}
func (x Reads) CountIncidentsBy(ctx context.Context, keys []incidentlib.CountKey) ([]int, error) {
	return x.incidents.CountIncidentsBy(ctx, keys)
}
func (x Reads) Similar(ctx context.Context, id string, n int) ([]incidentlib.SimilarIncident, error) {
	return x.incidents.Similar(ctx, id, n)
}

// incidentlib.IncidentAggregates, with incidentlib.IncidentSets: the incidents' room.
func (x Reads) MatchSet(ctx context.Context, f incidentlib.IncidentFilter) (*roaring.Bitmap, error) {
	return x.incidents.MatchSet(ctx, f)
}
func (x Reads) FacetsOf(ctx context.Context, set *roaring.Bitmap, kinds []incidentlib.TermKind) ([]incidentlib.Facet, error) {
	return x.incidents.FacetsOf(ctx, set, kinds)
}
func (x Reads) YearsOf(ctx context.Context, set *roaring.Bitmap) ([]incidentlib.YearCount, error) {
	return x.incidents.YearsOf(ctx, set)
}
func (x Reads) YearTermCountsOf(ctx context.Context, set *roaring.Bitmap, kind incidentlib.TermKind) ([]incidentlib.YearTermCount, error) {
	return x.incidents.YearTermCountsOf(ctx, set, kind)
}
func (x Reads) PairCountsOf(ctx context.Context, set *roaring.Bitmap, rows, columns incidentlib.TermKind) ([]incidentlib.PairCount, error) {
	return x.incidents.PairCountsOf(ctx, set, rows, columns)
}
func (x Reads) TopOrganizationsOf(ctx context.Context, set *roaring.Bitmap, first int) ([]incidentlib.OrganizationCount, error) {
	return x.incidents.TopOrganizationsOf(ctx, set, first)
}
func (x Reads) DurationsOf(ctx context.Context, set *roaring.Bitmap) (*incidentlib.Durations, error) {
	return x.incidents.DurationsOf(ctx, set)
}
func (x Reads) FindOrganizationsBy(ctx context.Context, q incidentlib.OrganizationQuery, p incidentlib.PageArgs) (*incidentlib.OrganizationPage, error) {
	return x.incidents.FindOrganizationsBy(ctx, q, p)
}

// incidentlib.Snapshots: the incidents' room.
func (x Reads) ReadSnapshot(ctx context.Context) incidentlib.Snapshot {
	return x.incidents.ReadSnapshot(ctx)
}

// incidentlib.ChangeLog: the incidents' room.
func (x Reads) Seq() uint64                         { return x.incidents.Seq() }
func (x Reads) SeqAbove(seq uint64) <-chan struct{} { return x.incidents.SeqAbove(seq) }
func (x Reads) ChangesSince(ctx context.Context, seq uint64, limit int) ([]incidentlib.Change, error) {
	return x.incidents.ChangesSince(ctx, seq, limit)
}
func (x Reads) RawChangesSince(ctx context.Context, seq uint64, limit int) ([]incidentlib.Change, error) {
	return x.incidents.RawChangesSince(ctx, seq, limit)
}

// incidentlib.OrganizationService, incidentlib.TaxonomyService,
// incidentlib.TaxonomyLog, incidentlib.TaxonomyHistoryReader and
// incidentlib.GlossaryReader: the taxonomy's room.
func (x Reads) FindOrganizationsBySlugs(ctx context.Context, slugs []string) ([]*incidentlib.Organization, error) {
	return x.taxonomies.FindOrganizationsBySlugs(ctx, slugs)
}
func (x Reads) FindOrganizations(ctx context.Context, p incidentlib.PageArgs) (*incidentlib.OrganizationPage, error) {
	return x.taxonomies.FindOrganizations(ctx, p)
}
func (x Reads) Taxonomy() *incidentlib.Taxonomy { return x.taxonomies.Taxonomy() }
func (x Reads) TaxonomyChangesAfter(ctx context.Context, after uint64, limit int) ([]*incidentlib.TaxonomyChange, error) {
	return x.taxonomies.TaxonomyChangesAfter(ctx, after, limit)
}
func (x Reads) TaxonomyHistory(ctx context.Context, p incidentlib.PageArgs) (*incidentlib.TaxonomyChangePage, error) {
	return x.taxonomies.TaxonomyHistory(ctx, p)
}
func (x Reads) Glossary(ctx context.Context) (*incidentlib.Glossary, error) {
	return x.taxonomies.Glossary(ctx)
}

// incidentlib.TokenReader: the tokens' room.
func (x Reads) ListTokens(ctx context.Context) ([]*incidentlib.TokenInfo, error) {
	return x.tokens.ListTokens(ctx)
}
func (x Reads) Authenticate(ctx context.Context, secret string) (incidentlib.Identity, error) {
	return x.tokens.Authenticate(ctx, secret)
}

// incidentlib.HistoryService and incidentlib.HistoryLog: the history's room.
func (x Reads) History(ctx context.Context, id string, first, after int) (*incidentlib.VersionPage, error) {
	return x.versions.History(ctx, id, first, after)
}
func (x Reads) IncidentVersion(ctx context.Context, id string, version int) (*incidentlib.IncidentVersion, error) {
	return x.versions.IncidentVersion(ctx, id, version)
}
func (x Reads) DeletedIncident(ctx context.Context, id string) (*incidentlib.Incident, *incidentlib.IncidentVersion, error) {
	return x.versions.DeletedIncident(ctx, id)
}
func (x Reads) VersionsSince(ctx context.Context, seq uint64, limit int) ([]incidentlib.Change, error) {
	return x.versions.VersionsSince(ctx, seq, limit)
}

// incidentlib.Backuper and incidentlib.StoreMonitor: the maintenance room.
func (x Reads) Backup(ctx context.Context, w io.Writer) (int64, error) {
	return x.maintenance.Backup(ctx, w)
}
func (x Reads) StoreStats() incidentlib.StoreStats { return x.maintenance.StoreStats() }
