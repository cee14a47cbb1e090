package graph

import (
	"context"

	"github.com/99designs/gqlgen/graphql"

	"github.com/incidentlib/incidentlib"
)

// What the resolvers read from. A request's loaders read through one
// incidentlib.Reader (Loaders.reader): the resolver's services, made into
// one Reader once per resolver, or, while FastReads answers a query, a
// snapshot of the store (Resolver.Snapshots), so that every level of the
// query sees one state of the store in one read transaction. gqlgen's
// executor, which reads from several goroutines, always reads the
// services.

// services are the resolver's Incidents and Organizations as one Reader.
type services struct {
	incidentlib.IncidentService
	orgs incidentlib.OrganizationService
}

func (s *services) FindOrganizationsBySlugs(ctx context.Context, slugs []string) ([]*incidentlib.Organization, error) {
	return s.orgs.FindOrganizationsBySlugs(ctx, slugs)
}

// loaderReads are the read functions of the loaders, made once per
// resolver (a closure per loader per request was 5 allocations). Each
// reads from the request's Reader.
type loaderReads struct {
	incidents     func(ctx context.Context, src incidentlib.Reader, ids []string) ([]*incidentlib.Incident, error)
	recurrences   func(ctx context.Context, src incidentlib.Reader, ids []string) ([][]string, error)
	relatedBy     func(ctx context.Context, src incidentlib.Reader, ids []string) ([][]string, error)
	organizations func(ctx context.Context, src incidentlib.Reader, slugs []string) ([]*incidentlib.Organization, error)
	terms         func(ctx context.Context, src incidentlib.Reader, keys []incidentlib.TermKey) ([]*incidentlib.Term, error)
	counts        func(ctx context.Context, src incidentlib.Reader, keys []incidentlib.CountKey) ([]int, error)
}

func (r *Resolver) reads() *loaderReads {
	r.readsOnce.Do(func() {
		r.services = traceReads(&services{IncidentService: r.Incidents, orgs: r.Organizations}) // a span per store read when tracing is on
		r.loaderReads = &loaderReads{
			incidents: findIncidents,
			recurrences: func(ctx context.Context, src incidentlib.Reader, ids []string) ([][]string, error) {
				return src.RecurrenceIDs(ctx, ids)
			},
			relatedBy: func(ctx context.Context, src incidentlib.Reader, ids []string) ([][]string, error) {
				return src.RelatedByIDs(ctx, ids)
			},
			organizations: func(ctx context.Context, src incidentlib.Reader, slugs []string) ([]*incidentlib.Organization, error) {
				return src.FindOrganizationsBySlugs(ctx, slugs)
			},
			terms: func(_ context.Context, _ incidentlib.Reader, keys []incidentlib.TermKey) ([]*incidentlib.Term, error) {
				tax := r.taxonomy()
				out := make([]*incidentlib.Term, len(keys))
				for i, k := range keys {
					out[i] = tax.Term(k.Kind, tax.Canonical(k.Kind, k.Slug)) // an alias answers its term, as filters do
				}
				return out, nil
			},
			counts: func(ctx context.Context, src incidentlib.Reader, keys []incidentlib.CountKey) ([]int, error) {
				return src.CountIncidentsBy(ctx, keys)
			},
		}
	})
	return r.loaderReads
}

// findIncidents is the read of the Incidents loader. A partial read (an
// upstream library that could not be read, incidentlib.IsPartialRead)
// gives the incidents read, nil for the others, and one
// UPSTREAM_UNAVAILABLE error in the response beside them. Outside a field
// (FastReads) a partial read fails, so that the query goes to gqlgen's
// executor, which places the error.
func findIncidents(ctx context.Context, src incidentlib.Reader, ids []string) ([]*incidentlib.Incident, error) {
	incs, err := src.FindIncidentsByIDs(ctx, ids)
	if incidentlib.IsPartialRead(incs, err) && graphql.GetFieldContext(ctx) != nil {
		graphql.AddError(ctx, err)
		return incs, nil
	}
	return incs, err
}

// reader is what the request in ctx reads from (see Loaders.reader).
func (r *Resolver) reader(ctx context.Context) incidentlib.Reader { return r.loaders(ctx).reader }

// readSnapshot makes ls read from a snapshot of the store, if snaps is
// not nil, until releaseSnapshot: the reads of one goroutine (FastReads)
// then see one state of the store, in one read transaction. Nothing else
// may read through ls meanwhile.
func (ls *Loaders) readSnapshot(ctx context.Context, snaps incidentlib.Snapshots) {
	if snaps == nil || ls.snapshot != nil {
		return
	}
	ls.snapshot = traceSnapshot(snaps.ReadSnapshot(ctx))
	ls.reader = ls.snapshot
}

// releaseSnapshot releases the snapshot ls reads from, if any, and makes
// it read from the resolver's services again.
func (ls *Loaders) releaseSnapshot() {
	if ls.snapshot == nil {
		return
	}
	ls.snapshot.Release()
	ls.snapshot, ls.reader = nil, ls.services
}
