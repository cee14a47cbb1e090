package graph

import (
	"context"

	"github.com/vektah/gqlparser/v2/ast"

	"github.com/incidentlib/incidentlib"
	"github.com/incidentlib/incidentlib/graph/model"
)

func (x *fastExec) query(sel ast.SelectionSet) {
	p := x.plan(sel, "Query")
	qr := x.r.Query()
	x.byte('{')
	for i := range p.fields {
		f := &p.fields[i]
		x.key(i, f)
		switch f.Name {
		case "__typename":
			x.str("Query")
		case "incidents":
			args := must(x.ec.field_Query_incidents_args(x.ctx, f.args))
			x.connection(must(x.r.connection(x.ctx, argFilter(args), argOrder(args), pageArgs(args))), f.Selections)
		case "incident":
			args := must(x.ec.field_Query_incident_args(x.ctx, f.args))
			if inc := must(qr.Incident(x.ctx, args["id"].(string))); inc != nil {
				x.incidentList([]*model.Incident{inc}, f.Selections, false)
			} else {
				x.null()
			}
		case "organization":
			args := must(x.ec.field_Query_organization_args(x.ctx, f.args))
			if o := must(qr.Organization(x.ctx, args["slug"].(string))); o != nil {
				x.organizations([]*model.Organization{o}, f.Selections).write(x, 0)
			} else {
				x.null()
			}
		case "taxonomy":
			args := must(x.ec.field_Query_taxonomy_args(x.ctx, f.args))
			x.termList(must(qr.Taxonomy(x.ctx, args["kind"].(model.TaxonomyKind))), f.Selections)
		case "term":
			args := must(x.ec.field_Query_term_args(x.ctx, f.args))
			if t := must(qr.Term(x.ctx, args["kind"].(model.TaxonomyKind), args["slug"].(string))); t != nil {
				x.terms([]*model.TaxonomyTerm{t}, f.Selections).write(x, 0)
			} else {
				x.null()
			}
		case "node":
			args := must(x.ec.field_Query_node_args(x.ctx, f.args))
			x.nodes([]model.Node{must(qr.Node(x.ctx, args["id"].(string)))}, f.Selections, false)
		case "nodes":
			ids := must(x.ec.field_Query_nodes_args(x.ctx, f.args))["ids"].([]string)
			nodes := must(qr.Nodes(x.ctx, ids))
			if len(nodes) != len(ids) {
				bail()
			}
			x.nodes(nodes, f.Selections, true)
		case "search":
			args := must(x.ec.field_Query_search_args(x.ctx, f.args))
			filter, _ := args["filter"].(*incidentlib.IncidentFilter)
			lang, _ := args["lang"].(*model.Lang)
			first, _ := args["first"].(*int)
			after, _ := args["after"].(*string)
			var conn *model.IncidentSearchConnection
			var err error
			x.outsideSnapshot(func(ctx context.Context) {
				conn, err = qr.Search(ctx, args["query"].(string), filter, lang, first, after)
			})
			if err != nil {
				bail()
			}
			x.searchConnection(conn, f.Selections)
		case "stats":
			args := must(x.ec.field_Query_stats_args(x.ctx, f.args))
			filter, _ := args["filter"].(*incidentlib.IncidentFilter)
			x.stats(filter, f.Selections) // fast_stats.go
		default: // a field not written here is in FastReadsHandsOn
			bail()
		}
	}
	x.byte('}')
}

// nodes writes objects of any Node type, null where nil, as a list or its
// only element. Each type's objects are read as one list.
func (x *fastExec) nodes(nodes []model.Node, sel ast.SelectionSet, list bool) {
	var incs []*model.Incident
	var orgs []*model.Organization
	var termObjs []*model.TaxonomyTerm
	at := make([]int, len(nodes)) // position in its type's list
	for i, n := range nodes {
		switch n := n.(type) {
		case *model.Incident:
			at[i] = len(incs)
			incs = append(incs, n)
		case *model.Organization:
			at[i] = len(orgs)
			orgs = append(orgs, n)
		case *model.TaxonomyTerm:
			at[i] = len(termObjs)
			termObjs = append(termObjs, n)
		case nil:
		default:
			bail()
		}
	}
	var ib *incidents
	var ob *organizations
	var tb *terms
	if len(incs) > 0 {
		ib = x.incidents(incs, sel)
	}
	if len(orgs) > 0 {
		ob = x.organizations(orgs, sel)
	}
	if len(termObjs) > 0 {
		tb = x.terms(termObjs, sel)
	}
	if list {
		x.byte('[')
	}
	for i, n := range nodes {
		if i > 0 {
			x.byte(',')
		}
		switch n.(type) {
		case *model.Incident:
			ib.write(x, at[i])
		case *model.Organization:
			ob.write(x, at[i])
		case *model.TaxonomyTerm:
			tb.write(x, at[i])
		default:
			x.null()
		}
	}
	if list {
		x.byte(']')
	}
}

func argFilter(args map[string]any) *incidentlib.IncidentFilter {
	f, _ := args["filter"].(*incidentlib.IncidentFilter)
	return f
}

func pageArgs(args map[string]any) incidentlib.PageArgs {
	var p incidentlib.PageArgs
	p.First, _ = args["first"].(*int)
	p.After, _ = args["after"].(*string)
	p.Last, _ = args["last"].(*int)
	p.Before, _ = args["before"].(*string)
	return p
}

func argOrder(args map[string]any) *model.IncidentOrder {
	o, _ := args["orderBy"].(*model.IncidentOrder)
	return o
}

//nolint:dupl // two connection types, one writer (incidentConnection) behind both
func (x *fastExec) connection(c *model.IncidentConnection, sel ast.SelectionSet) {
	x.incidentConnection("IncidentConnection", sel, c.TotalCount, c.Nodes, c.PageInfo, func(sel ast.SelectionSet) { x.edges(c, sel) },
		func(f *pfield) bool { return x.connectionCounts(c, f) }) // fast_counts.go
}

//nolint:dupl // see connection
func (x *fastExec) searchConnection(c *model.IncidentSearchConnection, sel ast.SelectionSet) {
	x.incidentConnection("IncidentSearchConnection", sel, c.TotalCount, c.Nodes, c.PageInfo, func(sel ast.SelectionSet) { x.searchEdges(c, sel) }, nil)
}

// incidentConnection writes a connection of incidents of type typ; its
// edges are written by edges, and counts (if not nil) writes the fields
// it knows (facets, years), saying whether it did.
func (x *fastExec) incidentConnection(typ string, sel ast.SelectionSet, total int, nodes []*model.Incident, pi *model.PageInfo, edges func(ast.SelectionSet), counts func(*pfield) bool) {
	x.object(x.plan(sel, typ), typ, func(f *pfield) {
		switch f.Name {
		case "totalCount":
			x.int(total)
		case "nodes":
			x.incidentList(nodes, f.Selections, true)
		case "edges":
			edges(f.Selections)
		case "pageInfo":
			x.pageInfo(pi, f.Selections)
		default: // a field not written here is in FastReadsHandsOn
			if counts == nil || !counts(f) {
				bail()
			}
		}
	})
}

// edgeNodes reads the nodes of a connection's edges, one list per node
// selection of the edges' plan p.
func (x *fastExec) edgeNodes(p *plan, nodes []*model.Incident) []*incidents {
	out := make([]*incidents, len(p.fields))
	for i := range p.fields {
		if p.fields[i].Name == "node" {
			out[i] = x.incidents(nodes, p.fields[i].Selections)
		}
	}
	return out
}

func (x *fastExec) searchEdges(c *model.IncidentSearchConnection, sel ast.SelectionSet) {
	p := x.plan(sel, "IncidentSearchEdge")
	nodes := x.edgeNodes(p, c.Nodes)
	x.list(len(c.Edges), func(k int) {
		e := c.Edges[k]
		x.object(p, "IncidentSearchEdge", func(f *pfield) {
			switch f.Name {
			case "cursor":
				x.str(e.Cursor)
			case "node":
				nodes[f.index].write(x, k)
			case "score":
				x.float(e.Score)
			case "highlights":
				hp := x.plan(f.Selections, "Highlight")
				x.list(len(e.Highlights), func(j int) {
					h := e.Highlights[j]
					x.object(hp, "Highlight", func(f *pfield) {
						switch f.Name {
						case "field":
							x.str(string(h.Field))
						case "lang":
							if h.Lang == nil {
								x.null()
							} else {
								x.str(string(*h.Lang))
							}
						case "snippet":
							x.str(h.Snippet)
						case "via":
							x.str(string(h.Via))
						default:
							bail()
						}
					})
				})
			default:
				bail()
			}
		})
	})
}

func (x *fastExec) edges(c *model.IncidentConnection, sel ast.SelectionSet) {
	p := x.plan(sel, "IncidentEdge")
	nodes := x.edgeNodes(p, c.Nodes)
	x.list(len(c.Edges), func(k int) {
		x.object(p, "IncidentEdge", func(f *pfield) {
			switch f.Name {
			case "cursor":
				x.str(c.Edges[k].Cursor)
			case "node":
				nodes[f.index].write(x, k)
			default:
				bail()
			}
		})
	})
}

//nolint:dupl // see durationStats
func (x *fastExec) pageInfo(pi *model.PageInfo, sel ast.SelectionSet) {
	x.object(x.plan(sel, "PageInfo"), "PageInfo", func(f *pfield) {
		switch f.Name {
		case "hasNextPage":
			x.bool(pi.HasNextPage)
		case "hasPreviousPage":
			x.bool(pi.HasPreviousPage)
		case "startCursor":
			x.optStr(pi.StartCursor)
		case "endCursor":
			x.optStr(pi.EndCursor)
		default:
			bail()
		}
	})
}
