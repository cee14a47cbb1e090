// Package graph serves the incident library over GraphQL with gqlgen: the
// generated executor, the resolvers, and the per-request dataloaders.
package graph

//go:generate go tool gqlgen generate

import (
	"context"
	"net/http"
	"sync"
	"sync/atomic"

	"github.com/99designs/gqlgen/graphql"

	"github.com/incidentlib/incidentlib"
	"github.com/incidentlib/incidentlib/graph/model"
)

// Resolver is the root of the resolvers; it holds the reads. The writes
// are not here: every mutation writes through the one writer the server
// grants the request (WithWriter). Incidents,
// Organizations and Taxonomy are required; Incidents may be the store
// composed with an upstream library, whose partial reads
// (incidentlib.IsPartialRead) are answered with the data and one error
// beside it.
type Resolver struct {
	Incidents     incidentlib.IncidentService
	Organizations incidentlib.OrganizationService
	Taxonomy      *incidentlib.Taxonomy
	// Taxonomies, if set, gives the taxonomy as of now (the store's,
	// which an admin's change replaces); Taxonomy is then only its
	// fallback. TaxonomyChanges, if set, serves the history of the
	// taxonomy's and the organizations' changes (taxadmin.resolvers.go);
	// without it the history answers UNAVAILABLE.
	Taxonomies      incidentlib.TaxonomyService
	TaxonomyChanges incidentlib.TaxonomyHistoryReader
	// Glossary, if set, serves Query.glossary (glossary.resolvers.go);
	// without it the glossary answers UNAVAILABLE.
	Glossary      incidentlib.GlossaryReader
	LoaderMetrics LoaderMetrics
	// Search, if set, serves Query.search (search.resolvers.go); without it
	// search answers UNAVAILABLE.
	Search incidentlib.SearchService
	// Snapshots, if set, gives FastReads one state of the store that
	// Incidents and Organizations read, for all the levels of a query
	// (see reads.go). Leave it nil when Incidents is not that store alone
	// (an upstream library composed in front of it).
	Snapshots incidentlib.Snapshots
	// Aggregates, if set, serves Query.stats and the orderBy and
	// nameStartsWith of Query.organizations (frontend.resolvers.go);
	// without it they answer UNAVAILABLE.
	Aggregates incidentlib.IncidentAggregates
	// TokenService lists the API tokens (tokens.resolvers.go); without
	// it the token list answers UNAVAILABLE.
	TokenService incidentlib.TokenReader
	// History reads the incidents' history (history.resolvers.go); without
	// it the history fields answer UNAVAILABLE.
	History incidentlib.HistoryService
	// IncidentURL, if set, is an incident's address as the request r
	// reaches the library, which citations name (citation.go; serve's is
	// restapi's rule, server.Assemble); without it citation answers
	// UNAVAILABLE.
	IncidentURL func(r *http.Request, id string) string

	// views are the views of the two languages, made with a wrapper per
	// taxonomy term and shared by every request until the taxonomy
	// changes.
	views atomic.Pointer[langViews]

	loaderPools loaderPools // caches of finished requests' loaders
	readsOnce   sync.Once
	loaderReads *loaderReads       // the loaders' read functions (reads)
	services    incidentlib.Reader // Incidents and Organizations as one Reader

	glossaryOrder atomic.Pointer[sortedGlossary] // the glossary's last version in key order (glossary.go)
}

// langViews are the views of the two languages over one taxonomy.
type langViews struct {
	tax *incidentlib.Taxonomy
	v   [2]*model.View
}

// viewFor returns the shared view of lang over the taxonomy as of now,
// made again when the taxonomy changed.
func (r *Resolver) viewFor(lang incidentlib.Lang) *model.View {
	tax := r.taxonomy()
	vs := r.views.Load()
	if vs == nil || vs.tax != tax {
		vs = &langViews{tax: tax, v: [2]*model.View{model.NewView(incidentlib.LangEn, tax), model.NewView(incidentlib.LangKo, tax)}}
		r.views.Store(vs)
	}
	if lang == incidentlib.LangKo {
		return vs.v[1]
	}
	return vs.v[0]
}

type langKey struct{}

// WithLang sets the request's default language (from Accept-Language).
func WithLang(ctx context.Context, l incidentlib.Lang) context.Context {
	return context.WithValue(ctx, langKey{}, l)
}

// LangFrom returns the request's default language, English if none.
func LangFrom(ctx context.Context) incidentlib.Lang {
	if l, ok := ctx.Value(langKey{}).(incidentlib.Lang); ok && l.IsValid() {
		return l
	}
	return incidentlib.LangEn
}

// view returns the request's view (language and taxonomy), one per
// request, made with its loaders.
func (r *Resolver) view(ctx context.Context) *model.View { return r.loaders(ctx).view }

// group is a set of incidents and the selection asked of each of them.
type group struct {
	incs []*incidentlib.Incident
	sel  []graphql.CollectedField
}

var incidentTypes = []string{"Incident", "Node"}

// prefetch reads, level by level, every related incident, recurrence link,
// organization and count that the selection will ask for below the given
// incidents: one batch per loader per level, whatever the page size. The
// batch resolvers below then find everything in the loaders' caches.
func (r *Resolver) prefetch(ctx context.Context, level []group) error {
	oc := graphql.GetOperationContext(ctx)
	ls := r.loaders(ctx)
	for len(level) > 0 {
		var incKeys, recKeys, relByKeys, orgKeys []string
		var countKeys []incidentlib.CountKey
		type deferred struct {
			kind string // related, relatedBy, recurrenceOf, recurrences
			srcs []*incidentlib.Incident
			sel  []graphql.CollectedField
		}
		var defs []deferred
		for _, g := range level {
			for _, f := range g.sel {
				switch f.Name {
				case "related", "relatedBy", "recurrenceOf", "recurrences":
					sub := graphql.CollectFields(oc, f.Selections, incidentTypes)
					defs = append(defs, deferred{f.Name, g.incs, sub})
					for _, inc := range g.incs {
						switch f.Name {
						case "related":
							incKeys = append(incKeys, inc.Related...)
						case "recurrenceOf":
							if inc.RecurrenceOf != "" {
								incKeys = append(incKeys, inc.RecurrenceOf)
							}
						case "recurrences":
							recKeys = append(recKeys, inc.ID)
						case "relatedBy":
							relByKeys = append(relByKeys, inc.ID)
						}
					}
				case "organization":
					for _, inc := range g.incs {
						orgKeys = append(orgKeys, inc.OrgSlug)
					}
					if hasField(oc, f, "Organization", "incidentCount") {
						for _, inc := range g.incs {
							countKeys = append(countKeys, incidentlib.CountKey{Kind: incidentlib.CountKindOrganization, Slug: inc.OrgSlug})
						}
					}
				case "domains", "symptoms", "components", "contributing", "rootCause", "severity":
					if hasField(oc, f, "TaxonomyTerm", "incidentCount") {
						for _, inc := range g.incs {
							for _, t := range termsOf(inc, f.Name) {
								countKeys = append(countKeys, incidentlib.CountKey{Kind: string(t.Kind), Slug: t.Slug})
							}
						}
					}
				}
			}
		}
		recs, err := loadMap(ctx, &ls.Recurrences, recKeys)
		if err != nil {
			return err
		}
		for _, k := range recKeys {
			incKeys = append(incKeys, recs[k]...)
		}
		relBy, err := loadMap(ctx, &ls.RelatedBy, relByKeys)
		if err != nil {
			return err
		}
		for _, k := range relByKeys {
			incKeys = append(incKeys, relBy[k]...)
		}
		incs, err := loadMap(ctx, &ls.Incidents, incKeys)
		if err != nil {
			return err
		}
		if len(orgKeys) > 0 {
			if _, err := ls.Organizations.LoadAll(ctx, orgKeys); err != nil {
				return err
			}
		}
		if len(countKeys) > 0 {
			if _, err := ls.Counts.LoadAll(ctx, countKeys); err != nil {
				return err
			}
		}
		var next []group
		for _, d := range defs {
			if len(d.sel) == 0 {
				continue
			}
			var children []*incidentlib.Incident
			for _, src := range d.srcs {
				var ids []string
				switch d.kind {
				case "related":
					ids = src.Related
				case "recurrenceOf":
					if src.RecurrenceOf != "" {
						ids = []string{src.RecurrenceOf}
					}
				case "recurrences":
					ids = recs[src.ID]
				case "relatedBy":
					ids = relBy[src.ID]
				}
				for _, id := range ids {
					if c := incs[id]; c != nil {
						children = append(children, c)
					}
				}
			}
			if len(children) > 0 {
				next = append(next, group{children, d.sel})
			}
		}
		level = next
	}
	return nil
}

// loadMap loads keys through l, in one batch if any is not cached yet,
// and returns their values by key.
func loadMap[K comparable, V any](ctx context.Context, l *Loader[K, V], keys []K) (map[K]V, error) {
	m := make(map[K]V, len(keys))
	if len(keys) == 0 {
		return m, nil
	}
	vals, err := l.LoadAll(ctx, keys)
	if err != nil {
		return nil, err
	}
	for i, k := range keys {
		m[k] = vals[i]
	}
	return m, nil
}

func hasField(oc *graphql.OperationContext, f graphql.CollectedField, typ, name string) bool {
	for _, c := range graphql.CollectFields(oc, f.Selections, []string{typ, "Node"}) {
		if c.Name == name {
			return true
		}
	}
	return false
}

func termsOf(inc *incidentlib.Incident, field string) []incidentlib.TermKey {
	var kind incidentlib.TermKind
	var slugs []string
	switch field {
	case "domains":
		kind, slugs = incidentlib.KindDomain, inc.Domain
	case "symptoms":
		kind, slugs = incidentlib.KindSymptom, inc.Symptoms
	case "components":
		kind, slugs = incidentlib.KindComponent, inc.Components
	case "contributing":
		kind, slugs = incidentlib.KindContributing, inc.Contributing
	case "rootCause":
		kind, slugs = incidentlib.KindRootCause, []string{inc.RootCause}
	case "severity":
		kind, slugs = incidentlib.KindSeverity, []string{inc.Severity}
	}
	out := make([]incidentlib.TermKey, 0, len(slugs))
	for _, s := range slugs {
		if s != "" {
			out = append(out, incidentlib.TermKey{Kind: kind, Slug: s})
		}
	}
	return out
}

// prefetchSelected prefetches below incidents for the selection of the
// field being resolved, which returns incidents directly (incident, node,
// nodes, related, ...).
func (r *Resolver) prefetchSelected(ctx context.Context, incs []*incidentlib.Incident) error {
	fc := graphql.GetFieldContext(ctx)
	if fc == nil || len(incs) == 0 {
		return nil
	}
	sel := graphql.CollectFields(graphql.GetOperationContext(ctx), fc.Field.Selections, incidentTypes)
	return r.prefetch(ctx, []group{{incs, sel}})
}

// prefetchConnection prefetches below the incidents of a connection, for
// the selections of its nodes and edges { node }.
func (r *Resolver) prefetchConnection(ctx context.Context, incs []*incidentlib.Incident) error {
	fc := graphql.GetFieldContext(ctx)
	if fc == nil || len(incs) == 0 {
		return nil
	}
	oc := graphql.GetOperationContext(ctx)
	var groups []group
	for _, f := range graphql.CollectFields(oc, fc.Field.Selections, []string{"IncidentConnection"}) {
		switch f.Name {
		case "nodes":
			groups = append(groups, group{incs, graphql.CollectFields(oc, f.Selections, incidentTypes)})
		case "edges":
			for _, e := range graphql.CollectFields(oc, f.Selections, []string{"IncidentEdge"}) {
				if e.Name == "node" {
					groups = append(groups, group{incs, graphql.CollectFields(oc, e.Selections, incidentTypes)})
				}
			}
		}
	}
	return r.prefetch(ctx, groups)
}
