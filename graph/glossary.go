package graph

import (
	"context"
	"encoding/base64"
	"slices"
	"strconv"
	"strings"
	"unicode/utf8"

	"github.com/incidentlib/incidentlib"
	"github.com/incidentlib/incidentlib/glossary"
	"github.com/incidentlib/incidentlib/graph/model"
)

// Helpers of the glossary's administration (glossary.resolvers.go, which
// gqlgen rewrites). The writes are the taxonomy's admin's (taxonomyAdmin):
// the same role, the same write side, the same history. The glossary is
// read whole from Resolver.Glossary (at most glossary.MaxEntries entries,
// in memory) and paged here by key.

// glossaryEntryOf converts the GraphQL input.
func glossaryEntryOf(in model.GlossaryEntryInput) incidentlib.GlossaryEntry {
	e := incidentlib.GlossaryEntry{En: in.En, Ko: in.Ko}
	if in.Note != nil {
		e.Note = *in.Note
	}
	return e
}

// glossaryChange runs change, an admin's change of the glossary, and
// answers with its payload.
func (r *Resolver) glossaryChange(ctx context.Context,
	change func(ta incidentlib.TaxonomyWriter, who string) (*incidentlib.GlossaryEntry, error)) (*model.GlossaryEntryPayload, error) {
	ta, who, err := r.taxonomyAdmin(ctx)
	if err != nil {
		return nil, err
	}
	e, err := change(ta, who)
	return userPayload(err,
		func(ues []*model.UserError) *model.GlossaryEntryPayload {
			return &model.GlossaryEntryPayload{UserErrors: ues}
		},
		func() *model.GlossaryEntryPayload {
			return &model.GlossaryEntryPayload{Entry: e, UserErrors: []*model.UserError{}}
		})
}

// glossaryCursor is the cursor of the entry of key.
func glossaryCursor(key string) string {
	return base64.RawURLEncoding.EncodeToString([]byte("g" + key))
}

// glossaryPage pages the glossary by key: first (default
// incidentlib.DefaultPageSize, at most incidentlib.MaxPageSize) entries
// after the cursor after, of those with a form holding contains (case
// aside).
func (r *Resolver) glossaryPage(ctx context.Context, first *int, after, contains *string) (*model.GlossaryConnection, error) {
	if r.Glossary == nil {
		return nil, incidentlib.Errorf(incidentlib.EUNAVAILABLE, "this server keeps no glossary")
	}
	n := incidentlib.DefaultPageSize
	if first != nil {
		if *first < 0 || *first > incidentlib.MaxPageSize {
			return nil, incidentlib.FieldErrorf(incidentlib.EINVALID, []string{"first"}, "first must be between 0 and %d, got %d", incidentlib.MaxPageSize, *first)
		}
		n = *first
	}
	from := ""
	if after != nil {
		b, err := base64.RawURLEncoding.DecodeString(*after)
		if err != nil || len(b) < 2 || b[0] != 'g' || !utf8.Valid(b[1:]) {
			return nil, incidentlib.FieldErrorf(incidentlib.EBADCURSOR, []string{"after"}, "after is not a cursor of the glossary")
		}
		from = string(b[1:])
	}
	var needle string
	if contains != nil {
		if utf8.RuneCountInString(*contains) > glossary.MaxFormRunes {
			return nil, incidentlib.FieldErrorf(incidentlib.EINVALID, []string{"contains"}, "contains may be at most %d characters long", glossary.MaxFormRunes)
		}
		needle = strings.ToLower(*contains)
	}
	g, err := r.Glossary.Glossary(ctx)
	if err != nil {
		return nil, err
	}
	conn := &model.GlossaryConnection{Edges: []*model.GlossaryEdge{}, Nodes: []*incidentlib.GlossaryEntry{}, PageInfo: &model.PageInfo{}}
	if g == nil {
		return conn, nil
	}
	conn.Version = strconv.FormatUint(g.Version, 10)
	sorted := r.glossarySorted(g)
	entries, keys := sorted.entries, sorted.keys
	if needle != "" {
		entries, keys = nil, nil
		for i, e := range sorted.entries {
			if holdsForm(e, needle) {
				entries, keys = append(entries, e), append(keys, sorted.keys[i])
			}
		}
	}
	conn.TotalCount = len(entries)
	if from != "" {
		at, found := slices.BinarySearch(keys, from)
		if found {
			at++
		}
		entries, keys = entries[at:], keys[at:]
	}
	if len(entries) > n {
		entries, conn.PageInfo.HasNextPage = entries[:n], true
	}
	for i, e := range entries {
		conn.Nodes = append(conn.Nodes, e)
		conn.Edges = append(conn.Edges, &model.GlossaryEdge{Cursor: glossaryCursor(keys[i]), Node: e})
	}
	endCursors(conn.PageInfo, len(conn.Edges), func(i int) *string { return &conn.Edges[i].Cursor })
	return conn, nil
}

// sortedGlossary is one version of the glossary in key order, with the
// keys: sorted once per version (Resolver.glossaryOrder), not per request.
type sortedGlossary struct {
	of      *incidentlib.Glossary // the glossary sorted (kept while it is the last)
	version uint64
	entries []*incidentlib.GlossaryEntry // into the Glossary's Entries, read only
	keys    []string                     // glossary.Key of each entry
}

// glossarySorted returns the entries of g in key order, sorted again only
// when g is not the glossary last sorted (the store hands out one
// *Glossary per version, a new one whenever the entries change; both the
// pointer and the version must match). It holds one version: at most
// glossary.MaxEntries pointers and keys.
func (r *Resolver) glossarySorted(g *incidentlib.Glossary) *sortedGlossary {
	if s := r.glossaryOrder.Load(); s != nil && s.of == g && s.version == g.Version {
		return s
	}
	s := &sortedGlossary{of: g, version: g.Version, entries: make([]*incidentlib.GlossaryEntry, len(g.Entries)), keys: make([]string, len(g.Entries))}
	for i := range g.Entries {
		s.entries[i] = &g.Entries[i]
	}
	slices.SortFunc(s.entries, func(a, b *incidentlib.GlossaryEntry) int { return strings.Compare(glossary.Key(a), glossary.Key(b)) })
	for i, e := range s.entries {
		s.keys[i] = glossary.Key(e)
	}
	r.glossaryOrder.Store(s)
	return s
}

// holdsForm says whether a form of e holds needle (lower case).
func holdsForm(e *incidentlib.GlossaryEntry, needle string) bool {
	for _, f := range slices.Concat(e.En, e.Ko) {
		if strings.Contains(strings.ToLower(f), needle) {
			return true
		}
	}
	return false
}

// glossaryComplexity adds the costs of the glossary's connection and of
// an entry's forms.
func glossaryComplexity(c *ComplexityRoot) {
	c.Query.Glossary = func(child int, first *int, _ *string, _ *string) int {
		return costList(pageSize(first, nil), child)
	}
	forms := func(child int) int { return costList(glossary.MaxForms, child) }
	c.GlossaryEntry.En = forms
	c.GlossaryEntry.Ko = forms
}
