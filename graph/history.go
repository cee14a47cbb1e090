package graph

import (
	"context"
	"strconv"
	"strings"

	"github.com/incidentlib/incidentlib"
	"github.com/incidentlib/incidentlib/graph/model"
)

// Helpers of the history resolvers (history.resolvers.go, which gqlgen
// rewrites).

// history returns the history service once the request is an editor's
// (history shows authors' names).
func (r *Resolver) history(ctx context.Context) (incidentlib.HistoryService, error) {
	return guarded(ctx, incidentlib.RoleEditor, r.History, "history")
}

// A history cursor is "v" and the version number.
func versionCursor(after *string) (int, error) {
	if after == nil {
		return 0, nil
	}
	s, ok := strings.CutPrefix(*after, "v")
	n, err := strconv.Atoi(s)
	if !ok || err != nil || n < 1 {
		return 0, incidentlib.Errorf(incidentlib.EBADCURSOR, "cursor %q is not a cursor of a history", *after)
	}
	return n, nil
}

func versionConnection(p *incidentlib.VersionPage) *model.IncidentVersionConnection {
	c := &model.IncidentVersionConnection{TotalCount: p.TotalCount, Edges: []*model.IncidentVersionEdge{}, Nodes: []*model.IncidentVersion{},
		PageInfo: &model.PageInfo{HasNextPage: p.HasNextPage}}
	for _, v := range p.Versions {
		node := model.NewIncidentVersion(v)
		cur := "v" + strconv.Itoa(v.Version)
		c.Edges = append(c.Edges, &model.IncidentVersionEdge{Cursor: cur, Node: node})
		c.Nodes = append(c.Nodes, node)
	}
	endCursors(c.PageInfo, len(c.Edges), func(i int) *string { return &c.Edges[i].Cursor })
	return c
}

func deref(s *string) string {
	if s == nil {
		return ""
	}
	return *s
}
