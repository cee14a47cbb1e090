package storage

import (
	"context"
	"io"
	"time"

	"github.com/incidentlib/incidentlib"
)

// Writer is the store's whole write side (incidentlib.Writer) as one
// value: each write forwarded by name to the room that holds it, never by
// embedding (a method the rooms gain is not a write until it is added
// here and to incidentlib.Writer). DB.Writer returns it; a cluster node's
// store takes these writes only under a log position (cluster.go,
// startLogged). It is also what a cluster node's Applier writes
// (cluster.Store, asserted in cmd/internal/clusternode): besides the
// library's writes, the tokens by their hash, the log position, and the
// version a purge reads.
type Writer struct {
	incidents  Incidents
	versions   Versions
	tokens     Tokens
	taxonomies Taxonomies
	clusterLog ClusterLog
}

var _ incidentlib.Writer = Writer{}

// Writer is the store's write side.
func (db *DB) Writer() Writer {
	return Writer{incidents: db.Incidents(), versions: db.Versions(), tokens: db.Tokens(), taxonomies: db.Taxonomies(), clusterLog: db.ClusterLog()}
}

// incidentlib.IncidentWriter, with incidentlib.HistoryWriter: the incidents' room.
func (x Writer) ImportIncidents(ctx context.Context, incs []*incidentlib.Incident, opts incidentlib.ImportOptions) (*incidentlib.ImportResult, error) {
	return x.incidents.ImportIncidents(ctx, incs, opts)
}
func (x Writer) UpsertIncident(ctx context.Context, in *incidentlib.Incident, opts incidentlib.WriteOptions) (*incidentlib.Incident, error) {
	return x.incidents.UpsertIncident(ctx, in, opts)
}
func (x Writer) DeleteIncident(ctx context.Context, id string, opts incidentlib.WriteOptions) (*incidentlib.DeleteResult, error) {
	return x.incidents.DeleteIncident(ctx, id, opts)
}
func (x Writer) RestoreIncident(ctx context.Context, id string, version int, comment string, opts incidentlib.WriteOptions) (*incidentlib.Incident, error) {
	return x.incidents.RestoreIncident(ctx, id, version, comment, opts)
}
func (x Writer) SubmitForReview(ctx context.Context, id string, opts incidentlib.WriteOptions) (*incidentlib.Incident, error) {
	return x.incidents.SubmitForReview(ctx, id, opts)
}

//nolint:dupl // named forwarding of each write to its room, as a stand-in does (docs/design.md, CONVENTIONS "Compose by named fields")
func (x Writer) DecideReview(ctx context.Context, id string, decision incidentlib.ReviewDecision, comment string, opts incidentlib.WriteOptions) (*incidentlib.Incident, error) {
	return x.incidents.DecideReview(ctx, id, decision, comment, opts)
}
func (x Writer) WithdrawIncident(ctx context.Context, id, reason string, opts incidentlib.WriteOptions) (*incidentlib.Incident, error) {
	return x.incidents.WithdrawIncident(ctx, id, reason, opts)
}
func (x Writer) PurgeVersion(ctx context.Context, id string, version int, reason string) (*incidentlib.IncidentVersion, error) {
	return x.incidents.PurgeVersion(ctx, id, version, reason)
}

// incidentlib.HistoryImporter: the history's room.
func (x Writer) ImportHistory(ctx context.Context, r io.Reader) (int, error) {
	return x.versions.ImportHistory(ctx, r)
}

// incidentlib.TokenIssuer: the tokens' room.
func (x Writer) CreateToken(ctx context.Context, name string, role incidentlib.Role, expires time.Time) (string, *incidentlib.TokenInfo, error) {
	return x.tokens.CreateToken(ctx, name, role, expires)
}
func (x Writer) RevokeToken(ctx context.Context, name string) (*incidentlib.TokenInfo, error) {
	return x.tokens.RevokeToken(ctx, name)
}

// incidentlib.TaxonomyWriter: the taxonomy's room.
func (x Writer) AddTerm(ctx context.Context, author string, in incidentlib.Term) (*incidentlib.Term, error) {
	return x.taxonomies.AddTerm(ctx, author, in)
}

//nolint:dupl // see DecideReview
func (x Writer) UpdateTerm(ctx context.Context, author string, kind incidentlib.TermKind, slug string, u incidentlib.TermUpdate) (*incidentlib.Term, error) {
	return x.taxonomies.UpdateTerm(ctx, author, kind, slug, u)
}
func (x Writer) AddTermAliases(ctx context.Context, author string, kind incidentlib.TermKind, slug string, aliases []string) (*incidentlib.Term, error) {
	return x.taxonomies.AddTermAliases(ctx, author, kind, slug, aliases)
}
func (x Writer) DeprecateTerm(ctx context.Context, author string, kind incidentlib.TermKind, slug string, deprecated bool) (*incidentlib.Term, error) {
	return x.taxonomies.DeprecateTerm(ctx, author, kind, slug, deprecated)
}
func (x Writer) AddOrganization(ctx context.Context, author string, in incidentlib.Organization) (*incidentlib.Organization, error) {
	return x.taxonomies.AddOrganization(ctx, author, in)
}
func (x Writer) RenameOrganization(ctx context.Context, author, slug, name string) (*incidentlib.Organization, *incidentlib.MergeResult, error) {
	return x.taxonomies.RenameOrganization(ctx, author, slug, name)
}
func (x Writer) MergeOrganizations(ctx context.Context, author, from, into string) (*incidentlib.MergeResult, error) {
	return x.taxonomies.MergeOrganizations(ctx, author, from, into)
}
func (x Writer) AddGlossaryEntry(ctx context.Context, author string, e incidentlib.GlossaryEntry) (*incidentlib.GlossaryEntry, error) {
	return x.taxonomies.AddGlossaryEntry(ctx, author, e)
}
func (x Writer) UpdateGlossaryEntry(ctx context.Context, author, key string, e incidentlib.GlossaryEntry) (*incidentlib.GlossaryEntry, error) {
	return x.taxonomies.UpdateGlossaryEntry(ctx, author, key, e)
}
func (x Writer) RemoveGlossaryEntry(ctx context.Context, author, key string) (*incidentlib.GlossaryEntry, error) {
	return x.taxonomies.RemoveGlossaryEntry(ctx, author, key)
}

// The rest of cluster.Store: incidentlib.TokenWriter (the tokens' room),
// incidentlib.LogApplier and incidentlib.LogGrouper (the cluster log's) and a purged version's time
// (the history's).
func (x Writer) CreateTokenHash(ctx context.Context, name string, role incidentlib.Role, hash []byte, expires time.Time) (*incidentlib.TokenInfo, error) {
	return x.tokens.CreateTokenHash(ctx, name, role, hash, expires)
}
func (x Writer) LogSeq(ctx context.Context) (seq uint64, logged bool, err error) {
	return x.clusterLog.LogSeq(ctx)
}
func (x Writer) SkipLogged(ctx context.Context, seq uint64, rejected error) error {
	return x.clusterLog.SkipLogged(ctx, seq, rejected)
}
func (x Writer) ApplyLogGroup(ctx context.Context, fn func(ctx context.Context, g incidentlib.LogGroup) error) error {
	return x.clusterLog.ApplyLogGroup(ctx, fn)
}
func (x Writer) Rejections(ctx context.Context) ([]incidentlib.LogRejection, error) {
	return x.clusterLog.Rejections(ctx)
}
func (x Writer) IncidentVersion(ctx context.Context, id string, version int) (*incidentlib.IncidentVersion, error) {
	return x.versions.IncidentVersion(ctx, id, version)
}
