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
	entries := make([]*incidentlib.GlossaryEntry, 0, len(g.Entries))
	for i := range g.Entries {
		if e := &g.Entries[i]; needle == "" || holdsForm(e, needle) {
			entries = append(entries, e)
		}
	}
	slices.SortFunc(entries, func(a, b *incidentlib.GlossaryEntry) int { return strings.Compare(glossary.Key(a), glossary.Key(b)) })
	conn.TotalCount = len(entries)
	if from != "" {
		at, found := slices.BinarySearchFunc(entries, from, func(e *incidentlib.GlossaryEntry, k string) int { return strings.Compare(glossary.Key(e), k) })
		if found {
			at++
		}
		entries = entries[at:]
	}
	if len(entries) > n {
		entries, conn.PageInfo.HasNextPage = entries[:n], true
	}
	for _, e := range entries {
		conn.Nodes = append(conn.Nodes, e)
		conn.Edges = append(conn.Edges, &model.GlossaryEdge{Cursor: glossaryCursor(glossary.Key(e)), Node: e})
	}
	endCursors(conn.PageInfo, len(conn.Edges), func(i int) *string { return &conn.Edges[i].Cursor })
	return conn, nil
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
