package graph

import (
	"bytes"
	"context"
	"errors"
	"math"
	"slices"
	"strconv"

	"github.com/99designs/gqlgen/graphql"
	lru "github.com/hashicorp/golang-lru/v2"
	"github.com/vektah/gqlparser/v2/ast"

	"github.com/incidentlib/incidentlib"
	"github.com/incidentlib/incidentlib/graph/model"
)

// FastReads answers read queries over the incident graph without gqlgen's
// per-field machinery: it walks the validated operation, reads each level
// of the graph for all its parents at once through the same resolvers and
// loaders, and writes the JSON response in one pass.
//
// gqlgen's executor starts a goroutine for every element of every object
// list and every batch field, and allocates a field context and a
// marshaler per value; for a list page that is about 12,500 allocations
// and 85% of the CPU. FastReads gives the same bytes with a few hundred.
//
// It is a gqlgen response interceptor, registered last (innermost): the
// parsing, validation, complexity and cost limits, timeouts, metrics and
// logging around it are gqlgen's and the server's as for any operation.
// Whatever it does not cover (mutations, introspection, facets, years,
// similar, organizations, @defer, any field error or null in a non-null
// position) it hands to gqlgen's executor unchanged: it bails out before
// writing a response, and the records it read stay in the request's
// loaders for the executor. TestFastReadsDifferential compares its
// bytes with gqlgen's over generated queries.
type FastReads struct {
	es *executableSchema
	r  *Resolver
	// Observe, if set, is told of each query: answered (true) or handed
	// to gqlgen's executor (false). Set it before serving.
	Observe func(answered bool)
	// OnPanic, if set, is told of a panic in FastReads (a bug): the query
	// is then handed to gqlgen's executor.
	OnPanic func(ctx context.Context, v any)
	// plans keeps, across requests, the plans of selection sets whose
	// fields use no variables (sharedPlans).
	plans *lru.Cache[planKey, *plan]
}

// sharedPlans is how many plans FastReads keeps across requests. A list
// page uses about ten; a plan holds its document, which gqlgen's query
// cache holds as well.
const sharedPlans = 4096

// NewFastReads returns the interceptor over the schema built by
// NewExecutableSchema with r as its resolvers.
func NewFastReads(es graphql.ExecutableSchema, r *Resolver) (*FastReads, error) {
	s, ok := es.(*executableSchema)
	if !ok {
		return nil, errors.New("fast reads: schema is not this package's executable schema")
	}
	plans, err := lru.New[planKey, *plan](sharedPlans)
	if err != nil {
		return nil, err
	}
	return &FastReads{es: s, r: r, plans: plans}, nil
}

var (
	_ graphql.HandlerExtension    = (*FastReads)(nil)
	_ graphql.ResponseInterceptor = (*FastReads)(nil)
)

// ExtensionName names the extension for gqlgen.
func (*FastReads) ExtensionName() string { return "FastReads" }

// Validate accepts any schema: NewFastReads checked it.
func (*FastReads) Validate(graphql.ExecutableSchema) error { return nil }

// InterceptResponse answers the operation if it can, or calls next.
func (f *FastReads) InterceptResponse(ctx context.Context, next graphql.ResponseHandler) *graphql.Response {
	oc := graphql.GetOperationContext(ctx)
	if oc == nil || oc.Operation == nil || oc.Operation.Operation != ast.Query {
		return next(ctx)
	}
	ls, ok := ctx.Value(loadersKey{}).(*Loaders)
	if !ok { // outside Middleware: the loaders of this operation
		ls = NewLoaders(ctx, f.r)
		ctx = context.WithValue(ctx, loadersKey{}, ls)
	}
	x := &fastExec{
		ctx:    ctx,
		ls:     ls,
		oc:     oc,
		ec:     newExecutionContext(oc, f.es, nil),
		r:      f.r,
		shared: f.plans,
		buf:    responseBuffer(ctx),
	}
	x.out = x.buf.AvailableBuffer()
	// Every level is read from one snapshot of the store, released
	// before gqlgen's executor, which reads concurrently, runs.
	ls.readSnapshot(ctx, f.r.Snapshots)
	answered := x.run(f.OnPanic)
	ls.releaseSnapshot()
	if !answered {
		if f.Observe != nil {
			f.Observe(false)
		}
		return next(ctx)
	}
	if f.Observe != nil {
		f.Observe(true)
	}
	// out is the buffer's own array unless the response outgrew it: the
	// buffer then grows to hold it, for the next responses.
	x.buf.Write(x.out)
	return &graphql.Response{Data: x.buf.Bytes(), Extensions: graphql.GetExtensions(ctx)}
}

// outsideSnapshot runs fn with the snapshot released before and a new one
// taken after: the search index reads the store in transactions of its
// own (it catches up with every committed change), and a goroutine holding
// a snapshot must not read the store in any other way.
func (x *fastExec) outsideSnapshot(fn func(ctx context.Context)) {
	x.ls.releaseSnapshot()
	fn(x.ctx)
	x.ls.readSnapshot(x.ctx, x.r.Snapshots)
}

// errBail stops FastReads: gqlgen's executor answers instead.
var errBail = errors.New("fast reads: not covered")

type fastExec struct {
	ctx context.Context
	ls  *Loaders // the request's, in ctx
	oc  *graphql.OperationContext
	ec  *executionContext
	r   *Resolver
	buf *bytes.Buffer // the response's buffer, which takes out when done
	out []byte        // the response written so far
	// shared holds the plans that no variable changes, for every request;
	// plans those of this request that use its variables.
	shared *lru.Cache[planKey, *plan]
	plans  map[planKey]*plan
}

func bail() { panic(errBail) }

// run writes the data of the operation into buf, or reports false.
func (x *fastExec) run(onPanic func(context.Context, any)) (ok bool) {
	defer func() {
		if v := recover(); v != nil {
			if v != errBail && onPanic != nil { //nolint:errorlint // the sentinel itself
				onPanic(x.ctx, v)
			}
			ok = false
		}
	}()
	if x.ctx.Err() != nil {
		return false
	}
	x.query(x.oc.Operation.SelectionSet)
	return len(graphql.GetErrors(x.ctx)) == 0
}

// A plan is a selection set collected for one object type: its fields in
// response order with their arguments parsed, made once per selection set
// whatever the number of objects, and kept across requests unless a
// variable can change it. A plan is not changed once made.
type plan struct {
	sel    ast.SelectionSet // what it was made from
	fields []pfield
}

type pfield struct {
	graphql.CollectedField
	index int            // its position in the plan
	key   string         // its response key, quoted, with the colon
	lang  *model.Lang    // the lang argument, when the field has one
	args  map[string]any // other parsed arguments
}

// planKey names a selection set by its first and last selections, which
// are nodes of a document gqlgen has parsed and does not change (a kept
// plan holds them, so no other node can take their addresses). gqlgen
// collects a field's selections into a new slice (merging fields of the
// same name), so the slice's own address names nothing; a plan found by
// its key is used only if all its selections are the same.
type planKey struct {
	first, last ast.Selection
	n           int
	typ         string
}

// satisfies lists what each object type is, for fragment type conditions.
var satisfies = map[string][]string{
	"Query":                    {"Query"},
	"Incident":                 {"Incident", "Node"},
	"Organization":             {"Organization", "Node"},
	"TaxonomyTerm":             {"TaxonomyTerm", "Node"},
	"IncidentConnection":       {"IncidentConnection"},
	"IncidentEdge":             {"IncidentEdge"},
	"IncidentSearchConnection": {"IncidentSearchConnection"},
	"IncidentSearchEdge":       {"IncidentSearchEdge"},
	"Highlight":                {"Highlight"},
	"PageInfo":                 {"PageInfo"},
	"Impact":                   {"Impact"},
	"Timeline":                 {"Timeline"},
	"Item":                     {"Item"},
	"Source":                   {"Source"},
	"Review":                   {"Review"},
}

// langArgs are the fields whose only argument is lang, with the generated
// parser of their arguments.
var langArgs = map[string]func(*executionContext, context.Context, map[string]any) (map[string]any, error){
	"Incident.title":           (*executionContext).field_Incident_title_args,
	"Incident.summary":         (*executionContext).field_Incident_summary_args,
	"Incident.lessons":         (*executionContext).field_Incident_lessons_args,
	"Incident.trigger":         (*executionContext).field_Incident_trigger_args,
	"Incident.detection":       (*executionContext).field_Incident_detection_args,
	"Incident.symptomsText":    (*executionContext).field_Incident_symptomsText_args,
	"Item.text":                (*executionContext).field_Item_text_args,
	"TaxonomyTerm.label":       (*executionContext).field_TaxonomyTerm_label_args,
	"TaxonomyTerm.description": (*executionContext).field_TaxonomyTerm_description_args,
}

func (x *fastExec) plan(sel ast.SelectionSet, typ string) *plan {
	if len(sel) == 0 {
		return &plan{}
	}
	key := planKey{sel[0], sel[len(sel)-1], len(sel), typ}
	if p, ok := x.shared.Get(key); ok && slices.Equal(p.sel, sel) {
		return p
	}
	if p := x.plans[key]; p != nil && slices.Equal(p.sel, sel) {
		return p
	}
	cfs := graphql.CollectFields(x.oc, sel, satisfies[typ])
	p := &plan{sel: sel, fields: make([]pfield, len(cfs))}
	for i, f := range cfs {
		if len(f.Deferrables) > 0 || hasOtherDirective(f.Directives) {
			bail()
		}
		p.fields[i].CollectedField = f
		p.fields[i].index = i
		p.fields[i].key = quotedKey(f.Alias)
		if len(f.Arguments) == 0 {
			continue
		}
		raw := f.ArgumentMap(x.oc.Variables)
		if parse := langArgs[typ+"."+f.Name]; parse != nil {
			args, err := parse(x.ec, x.ctx, raw)
			if err != nil {
				bail()
			}
			p.fields[i].lang, _ = args["lang"].(*model.Lang)
			continue
		}
		p.fields[i].args = raw // parsed by the field's own code
	}
	if usesVariables(sel, x.oc.Doc.Fragments) {
		if x.plans == nil {
			x.plans = map[planKey]*plan{}
		}
		x.plans[key] = p
	} else {
		x.shared.Add(key, p)
	}
	return p
}

// usesVariables tells whether a variable can change how the selection set
// collects: an argument or a directive of its fields, or a directive or
// field of the fragments it spreads, refers to one. (The selections of its
// fields have plans of their own.)
func usesVariables(sel ast.SelectionSet, frags ast.FragmentDefinitionList) bool {
	for _, s := range sel {
		switch s := s.(type) {
		case *ast.Field:
			if argumentsUseVariables(s.Arguments) || directivesUseVariables(s.Directives) {
				return true
			}
		case *ast.InlineFragment:
			if directivesUseVariables(s.Directives) || usesVariables(s.SelectionSet, frags) {
				return true
			}
		case *ast.FragmentSpread:
			if directivesUseVariables(s.Directives) {
				return true
			}
			def := frags.ForName(s.Name)
			if def == nil || directivesUseVariables(def.Directives) || usesVariables(def.SelectionSet, frags) {
				return true // (validation refuses unknown fragments; a cycle too)
			}
		default:
			return true
		}
	}
	return false
}

func directivesUseVariables(ds ast.DirectiveList) bool {
	for _, d := range ds {
		if argumentsUseVariables(d.Arguments) {
			return true
		}
	}
	return false
}

func argumentsUseVariables(args ast.ArgumentList) bool {
	for _, a := range args {
		if valueUsesVariable(a.Value) {
			return true
		}
	}
	return false
}

func valueUsesVariable(v *ast.Value) bool {
	if v == nil {
		return false
	}
	if v.Kind == ast.Variable {
		return true
	}
	for _, c := range v.Children {
		if valueUsesVariable(c.Value) {
			return true
		}
	}
	return false
}

func hasOtherDirective(ds ast.DirectiveList) bool {
	for _, d := range ds {
		if d.Name != "skip" && d.Name != "include" {
			return true
		}
	}
	return false
}

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
			args, err := x.ec.field_Query_incidents_args(x.ctx, f.args)
			if err != nil {
				bail()
			}
			conn, err := x.r.connection(x.ctx, argFilter(args), argOrder(args), pageArgs(args))
			if err != nil {
				bail()
			}
			x.connection(conn, f.Selections)
		case "incident":
			args, err := x.ec.field_Query_incident_args(x.ctx, f.args)
			if err != nil {
				bail()
			}
			inc, err := qr.Incident(x.ctx, args["id"].(string))
			if err != nil {
				bail()
			}
			if inc == nil {
				x.null()
				continue
			}
			x.incidentList([]*model.Incident{inc}, f.Selections, false)
		case "organization":
			args, err := x.ec.field_Query_organization_args(x.ctx, f.args)
			if err != nil {
				bail()
			}
			o, err := qr.Organization(x.ctx, args["slug"].(string))
			if err != nil {
				bail()
			}
			if o == nil {
				x.null()
				continue
			}
			x.organizations([]*model.Organization{o}, f.Selections).write(x, 0)
		case "taxonomy":
			args, err := x.ec.field_Query_taxonomy_args(x.ctx, f.args)
			if err != nil {
				bail()
			}
			terms, err := qr.Taxonomy(x.ctx, args["kind"].(model.TaxonomyKind))
			if err != nil {
				bail()
			}
			x.termList(terms, f.Selections)
		case "term":
			args, err := x.ec.field_Query_term_args(x.ctx, f.args)
			if err != nil {
				bail()
			}
			t, err := qr.Term(x.ctx, args["kind"].(model.TaxonomyKind), args["slug"].(string))
			if err != nil {
				bail()
			}
			if t == nil {
				x.null()
				continue
			}
			x.terms([]*model.TaxonomyTerm{t}, f.Selections).write(x, 0)
		case "node", "nodes":
			var ids []string
			if f.Name == "node" {
				args, err := x.ec.field_Query_node_args(x.ctx, f.args)
				if err != nil {
					bail()
				}
				ids = []string{args["id"].(string)}
			} else {
				args, err := x.ec.field_Query_nodes_args(x.ctx, f.args)
				if err != nil {
					bail()
				}
				ids = args["ids"].([]string)
			}
			var nodes []model.Node
			var err error
			if f.Name == "node" {
				var n model.Node
				n, err = qr.Node(x.ctx, ids[0])
				nodes = []model.Node{n}
			} else {
				nodes, err = qr.Nodes(x.ctx, ids)
			}
			if err != nil || len(nodes) != len(ids) {
				bail()
			}
			x.nodes(nodes, f.Selections, f.Name == "nodes")
		case "search":
			args, err := x.ec.field_Query_search_args(x.ctx, f.args)
			if err != nil {
				bail()
			}
			filter, _ := args["filter"].(*incidentlib.IncidentFilter)
			lang, _ := args["lang"].(*model.Lang)
			first, _ := args["first"].(*int)
			after, _ := args["after"].(*string)
			var conn *model.IncidentSearchConnection
			x.outsideSnapshot(func(ctx context.Context) {
				conn, err = qr.Search(ctx, args["query"].(string), filter, lang, first, after)
			})
			if err != nil {
				bail()
			}
			x.searchConnection(conn, f.Selections)
		default: // organizations, introspection
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

func (x *fastExec) connection(c *model.IncidentConnection, sel ast.SelectionSet) {
	x.incidentConnection("IncidentConnection", sel, c.TotalCount, c.Nodes, c.PageInfo, func(sel ast.SelectionSet) { x.edges(c, sel) })
}

func (x *fastExec) searchConnection(c *model.IncidentSearchConnection, sel ast.SelectionSet) {
	x.incidentConnection("IncidentSearchConnection", sel, c.TotalCount, c.Nodes, c.PageInfo, func(sel ast.SelectionSet) { x.searchEdges(c, sel) })
}

// incidentConnection writes a connection of incidents of type typ; its
// edges are written by edges.
func (x *fastExec) incidentConnection(typ string, sel ast.SelectionSet, total int, nodes []*model.Incident, pi *model.PageInfo, edges func(ast.SelectionSet)) {
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
		default: // facets, years
			bail()
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

// incidentList writes incs as a JSON array (list) or its only element.
func (x *fastExec) incidentList(incs []*model.Incident, sel ast.SelectionSet, list bool) {
	b := x.incidents(incs, sel)
	if !list {
		b.write(x, 0)
		return
	}
	b.writeRange(x, 0, len(incs))
}

// incidents is a list of incidents with, for each relation field of their
// selection, the related objects of all of them, read at once.
type incidents struct {
	objs []*model.Incident
	plan *plan
	rel  []any // per field of the plan: *incidentsByParent, *organizations, *termsByParent
}

// incidentsByParent are the incidents related to each of a list's
// incidents, as one list: parent k's are all.objs[offs[k]:offs[k+1]].
type incidentsByParent struct {
	all  *incidents
	offs []int
}

// termsByParent are the terms of one kind of each of a list's incidents.
type termsByParent struct {
	all  *terms
	offs []int
}

func (x *fastExec) incidents(objs []*model.Incident, sel ast.SelectionSet) *incidents {
	p := x.plan(sel, "Incident")
	b := &incidents{objs: objs, plan: p, rel: make([]any, len(p.fields))}
	if len(objs) == 0 {
		return b
	}
	if err := x.readLinks(objs, p); err != nil {
		bail()
	}
	ir := x.r.Incident()
	for i := range p.fields {
		f := &p.fields[i]
		switch f.Name {
		case "organization":
			orgs, err := ir.Organization(x.ctx, objs)
			if err != nil || len(orgs) != len(objs) {
				bail()
			}
			b.rel[i] = x.organizations(orgs, f.Selections)
		case "related", "recurrences":
			var lists [][]*model.Incident
			var err error
			if f.Name == "related" {
				lists, err = ir.Related(x.ctx, objs)
			} else {
				lists, err = ir.Recurrences(x.ctx, objs)
			}
			if err != nil || len(lists) != len(objs) {
				bail()
			}
			b.rel[i] = x.flatten(lists, f.Selections)
		case "recurrenceOf":
			incs, err := ir.RecurrenceOf(x.ctx, objs)
			if err != nil || len(incs) != len(objs) {
				bail()
			}
			lists := make([][]*model.Incident, len(incs))
			for k, inc := range incs {
				if inc != nil {
					lists[k] = incs[k : k+1]
				}
			}
			b.rel[i] = x.flatten(lists, f.Selections)
		case "domains", "symptoms", "components", "contributing", "rootCause", "severity":
			offs := make([]int, 1, len(objs)+1)
			all := make([]*model.TaxonomyTerm, 0, termCount(objs, f.Name))
			for _, o := range objs {
				all = appendTerms(all, o, f.Name)
				offs = append(offs, len(all))
			}
			b.rel[i] = &termsByParent{all: x.terms(all, f.Selections), offs: offs}
		}
	}
	return b
}

// readLinks reads, in one batch, every incident that the relation fields of
// p link the objects to, for the batch resolvers to find in the loaders.
// (The resolvers called above run without a field context, so without
// their own prefetch: FastReads reads level by level here.)
func (x *fastExec) readLinks(objs []*model.Incident, p *plan) error {
	var want struct{ related, recurrenceOf, recurrences bool }
	for i := range p.fields {
		switch p.fields[i].Name {
		case "related":
			want.related = true
		case "recurrenceOf":
			want.recurrenceOf = true
		case "recurrences":
			want.recurrences = true
		}
	}
	ls := x.r.loaders(x.ctx)
	n := 0
	for _, o := range objs {
		if want.related {
			n += len(o.Inc.Related)
		}
		if want.recurrenceOf && o.Inc.RecurrenceOf != "" {
			n++
		}
	}
	keys := make([]string, 0, n)
	if want.recurrences {
		ids := make([]string, len(objs))
		for k, o := range objs {
			ids[k] = o.Inc.ID
		}
		recs, err := ls.Recurrences.LoadAll(x.ctx, ids)
		if err != nil {
			return err
		}
		for _, r := range recs {
			keys = append(keys, r...)
		}
	}
	for _, o := range objs {
		if want.related {
			keys = append(keys, o.Inc.Related...)
		}
		if want.recurrenceOf && o.Inc.RecurrenceOf != "" {
			keys = append(keys, o.Inc.RecurrenceOf)
		}
	}
	if len(keys) == 0 {
		return nil
	}
	_, err := ls.Incidents.LoadAll(x.ctx, keys)
	return err
}

// termCount is how many terms appendTerms may append for objs' field: room
// for them all, made at once.
func termCount(objs []*model.Incident, field string) int {
	n := 0
	for _, o := range objs {
		if _, slugs, list := termSlugs(o, field); list {
			n += len(slugs)
		} else {
			n++ // rootCause, severity: one or none
		}
	}
	return n
}

// termSlugs is the kind and slugs of o's term list field (domains,
// symptoms, components, contributing); list is false for the others.
func termSlugs(o *model.Incident, field string) (kind incidentlib.TermKind, slugs []string, list bool) {
	switch field {
	case "domains":
		return incidentlib.KindDomain, o.Inc.Domain, true
	case "symptoms":
		return incidentlib.KindSymptom, o.Inc.Symptoms, true
	case "components":
		return incidentlib.KindComponent, o.Inc.Components, true
	case "contributing":
		return incidentlib.KindContributing, o.Inc.Contributing, true
	}
	return "", nil, false
}

// appendTerms appends the terms of o's field (domains, symptoms, ...) to
// all, as the field's method gives them, without a slice per incident.
func appendTerms(all []*model.TaxonomyTerm, o *model.Incident, field string) []*model.TaxonomyTerm {
	kind, slugs, list := termSlugs(o, field)
	if !list {
		var t *model.TaxonomyTerm
		switch field {
		case "rootCause":
			t = o.RootCause()
		case "severity":
			t = o.Severity()
		}
		if t != nil {
			all = append(all, t)
		}
		return all
	}
	for _, s := range slugs {
		if t := o.View.Term(kind, s); t != nil {
			all = append(all, t)
		}
	}
	return all
}

func (x *fastExec) flatten(lists [][]*model.Incident, sel ast.SelectionSet) *incidentsByParent {
	offs := make([]int, 1, len(lists)+1)
	n := 0
	for _, l := range lists {
		n += len(l)
	}
	all := make([]*model.Incident, 0, n)
	for _, l := range lists {
		all = append(all, l...)
		offs = append(offs, len(all))
	}
	return &incidentsByParent{all: x.incidents(all, sel), offs: offs}
}

func (b *incidents) writeRange(x *fastExec, from, to int) {
	x.list(to-from, func(k int) { b.write(x, from+k) })
}

func (b *incidents) write(x *fastExec, k int) {
	o := b.objs[k]
	if o == nil {
		bail() // a null in a non-null position: gqlgen reports it
	}
	inc := o.Inc
	x.byte('{')
	for i := range b.plan.fields {
		f := &b.plan.fields[i]
		x.key(i, f)
		switch f.Name {
		case "__typename":
			x.str("Incident")
		case "id":
			x.str(inc.ID)
		case "org":
			x.str(inc.Org)
		case "orgSlug":
			x.str(inc.OrgSlug)
		case "date":
			x.optStr(o.Date())
		case "dateKind":
			x.optStr(o.DateKind())
		case "title":
			x.optStr(o.Title(f.lang))
		case "summary":
			x.optStr(o.Summary(f.lang))
		case "lessons":
			x.optStr(o.Lessons(f.lang))
		case "trigger":
			x.optStr(o.Trigger(f.lang))
		case "detection":
			x.optStr(o.Detection(f.lang))
		case "symptomsText":
			x.optStr(o.SymptomsText(f.lang))
		case "languages":
			x.byte('[')
			for n, l := range o.Languages() {
				if n > 0 {
					x.byte(',')
				}
				x.str(string(l))
			}
			x.byte(']')
		case "impact":
			x.impact(o.Impact(), f.Selections)
		case "timeline":
			x.timeline(o.Timeline(), f.Selections)
		case "remediation":
			x.items(o.Remediation(), f.Selections)
		case "actionItems":
			x.items(o.ActionItems(), f.Selections)
		case "sources":
			x.sources(o.Sources(), f.Selections)
		case "docs":
			x.byte('[')
			for n, d := range o.Docs() {
				if len(d) == 0 {
					bail() // null in a non-null position
				}
				if n > 0 {
					x.byte(',')
				}
				x.marshal(model.MarshalJSON(d))
			}
			x.byte(']')
		case "relatedIds":
			x.byte('[')
			for n, id := range o.RelatedIds() {
				if n > 0 {
					x.byte(',')
				}
				x.str(id)
			}
			x.byte(']')
		case "recurrenceOfId":
			x.optStr(o.RecurrenceOfID())
		case "review":
			x.review(o.Review(), f.Selections)
		case "updatedAt":
			x.optStr(o.UpdatedAt())
		case "url":
			x.optStr(o.URL())
		case "extra":
			x.marshal(model.MarshalJSON(o.Extra()))
		case "organization":
			b.rel[i].(*organizations).write(x, k)
		case "related", "recurrences":
			r := b.rel[i].(*incidentsByParent)
			r.all.writeRange(x, r.offs[k], r.offs[k+1])
		case "recurrenceOf":
			r := b.rel[i].(*incidentsByParent)
			if r.offs[k] == r.offs[k+1] {
				x.null()
			} else {
				r.all.write(x, r.offs[k])
			}
		case "domains", "symptoms", "components", "contributing":
			r := b.rel[i].(*termsByParent)
			r.all.writeRange(x, r.offs[k], r.offs[k+1])
		case "rootCause", "severity":
			r := b.rel[i].(*termsByParent)
			if r.offs[k] == r.offs[k+1] {
				x.null()
			} else {
				r.all.write(x, r.offs[k])
			}
		default: // similar
			bail()
		}
	}
	x.byte('}')
}

// organizations is a list of organizations with their counts if asked.
type organizations struct {
	objs   []*model.Organization
	plan   *plan
	counts []int
}

func (x *fastExec) organizations(objs []*model.Organization, sel ast.SelectionSet) *organizations {
	p := x.plan(sel, "Organization")
	b := &organizations{objs: objs, plan: p}
	for i := range p.fields {
		if p.fields[i].Name == "incidentCount" && b.counts == nil {
			counts, err := x.r.Organization().IncidentCount(x.ctx, objs)
			if err != nil || len(counts) != len(objs) {
				bail()
			}
			b.counts = counts
		}
	}
	return b
}

func (b *organizations) write(x *fastExec, k int) {
	o := b.objs[k]
	if o == nil || o.Organization == nil {
		bail()
	}
	x.object(b.plan, "Organization", func(f *pfield) {
		switch f.Name {
		case "id":
			x.str(o.ID())
		case "slug":
			x.str(o.Slug)
		case "name":
			x.str(o.Name)
		case "incidentCount":
			x.int(b.counts[k])
		default: // incidents
			bail()
		}
	})
}

// terms is a list of taxonomy terms with their counts if asked.
type terms struct {
	objs   []*model.TaxonomyTerm
	plan   *plan
	counts []int
}

func (x *fastExec) terms(objs []*model.TaxonomyTerm, sel ast.SelectionSet) *terms {
	p := x.plan(sel, "TaxonomyTerm")
	b := &terms{objs: objs, plan: p}
	for i := range p.fields {
		if p.fields[i].Name == "incidentCount" && b.counts == nil && len(objs) > 0 {
			counts, err := x.r.TaxonomyTerm().IncidentCount(x.ctx, objs)
			if err != nil || len(counts) != len(objs) {
				bail()
			}
			b.counts = counts
		}
	}
	return b
}

func (x *fastExec) termList(objs []*model.TaxonomyTerm, sel ast.SelectionSet) {
	x.terms(objs, sel).writeRange(x, 0, len(objs))
}

func (b *terms) writeRange(x *fastExec, from, to int) {
	x.list(to-from, func(k int) { b.write(x, from+k) })
}

func (b *terms) write(x *fastExec, k int) {
	t := b.objs[k]
	if t == nil {
		bail()
	}
	x.object(b.plan, "TaxonomyTerm", func(f *pfield) {
		switch f.Name {
		case "id":
			x.str(t.ID())
		case "kind":
			x.str(string(t.Kind()))
		case "slug":
			x.str(t.Slug())
		case "label":
			x.str(t.Label(f.lang))
		case "description":
			x.optStr(t.Description(f.lang))
		case "incidentCount":
			x.int(b.counts[k])
		default: // incidents
			bail()
		}
	})
}

func (x *fastExec) impact(m *model.Impact, sel ast.SelectionSet) {
	x.object(x.plan(sel, "Impact"), "Impact", func(f *pfield) {
		switch f.Name {
		case "scope":
			x.optStr(m.Scope())
		case "users":
			x.optStr(m.Users())
		case "region":
			x.optStr(m.Region())
		default:
			bail()
		}
	})
}

func (x *fastExec) timeline(t *model.Timeline, sel ast.SelectionSet) {
	x.object(x.plan(sel, "Timeline"), "Timeline", func(f *pfield) {
		switch f.Name {
		case "detectedAfter":
			x.optStr(t.DetectedAfter())
		case "resolvedAfter":
			x.optStr(t.ResolvedAfter())
		case "detectedAfterSeconds":
			x.optInt(t.DetectedAfterSeconds())
		case "resolvedAfterSeconds":
			x.optInt(t.ResolvedAfterSeconds())
		default:
			bail()
		}
	})
}

func (x *fastExec) items(items []*model.Item, sel ast.SelectionSet) {
	p := x.plan(sel, "Item")
	x.list(len(items), func(k int) {
		x.object(p, "Item", func(f *pfield) {
			if f.Name != "text" {
				bail()
			}
			x.optStr(items[k].Text(f.lang))
		})
	})
}

func (x *fastExec) sources(srcs []*model.Source, sel ast.SelectionSet) {
	p := x.plan(sel, "Source")
	x.list(len(srcs), func(k int) {
		s := srcs[k]
		x.object(p, "Source", func(f *pfield) {
			switch f.Name {
			case "url":
				x.str(s.URL())
			case "kind":
				x.optStr(s.Kind())
			case "archived":
				x.optStr(s.Archived())
			case "status":
				x.optInt(s.Status())
			case "checkedAt":
				x.optStr(s.CheckedAt())
			case "finalUrl":
				x.optStr(s.FinalURL())
			default:
				bail()
			}
		})
	})
}

func (x *fastExec) review(r *model.Review, sel ast.SelectionSet) {
	x.object(x.plan(sel, "Review"), "Review", func(f *pfield) {
		switch f.Name {
		case "writtenBy":
			x.optStr(r.WrittenBy())
		case "reviewedAt":
			x.optStr(r.ReviewedAt())
		case "reviewedBy":
			x.optStr(r.ReviewedBy())
		default:
			bail()
		}
	})
}

// object writes one object: each field of p by value, __typename as typ.
func (x *fastExec) object(p *plan, typ string, value func(f *pfield)) {
	x.byte('{')
	for i := range p.fields {
		f := &p.fields[i]
		x.key(i, f)
		if f.Name == "__typename" {
			x.str(typ)
		} else {
			value(f)
		}
	}
	x.byte('}')
}

// list writes a JSON array of n elements, each by elem.
func (x *fastExec) list(n int, elem func(k int)) {
	x.byte('[')
	for k := range n {
		if k > 0 {
			x.byte(',')
		}
		elem(k)
	}
	x.byte(']')
}

// JSON output, as gqlgen writes it.

func (x *fastExec) key(i int, f *pfield) {
	if i > 0 {
		x.byte(',')
	}
	x.raw(f.key)
}

// quotedKey is the response key name as key writes it, quoted, with its
// colon.
func quotedKey(name string) string {
	x := &fastExec{out: make([]byte, 0, len(name)+8)}
	x.str(name)
	x.byte(':')
	return string(x.out)
}

func (x *fastExec) null() { x.raw("null") }

func (x *fastExec) bool(b bool) {
	if b {
		x.raw("true")
	} else {
		x.raw("false")
	}
}

func (x *fastExec) int(n int) {
	x.set(strconv.AppendInt(x.out, int64(n), 10))
}

// float writes f as gqlgen's Float marshaler does (%g); what JSON cannot
// hold goes to gqlgen.
func (x *fastExec) float(f float64) {
	if math.IsNaN(f) || math.IsInf(f, 0) {
		bail()
	}
	x.set(strconv.AppendFloat(x.out, f, 'g', -1, 64))
}

func (x *fastExec) optInt(n *int) {
	if n == nil {
		x.null()
		return
	}
	x.int(*n)
}

func (x *fastExec) optStr(s *string) {
	if s == nil {
		x.null()
		return
	}
	x.str(*s)
}

const hexDigits = "0123456789ABCDEF"

// escapeIn8 tells whether one of the 8 bytes of w (little-endian) is a
// control character, a quote or a backslash (what str escapes), testing
// them as one word.
func escapeIn8(w uint64) bool {
	const ones, highs = 0x0101010101010101, 0x8080808080808080
	// A byte below 0x20, or zero after xor with '"' or '\\', leaves its
	// high bit in (b - k) &^ b; no byte does unless one of them is there.
	quote, backslash := w^(ones*'"'), w^(ones*'\\')
	return ((w-ones*0x20)&^w|(quote-ones)&^quote|(backslash-ones)&^backslash)&highs != 0
}

// word8 is the 8 bytes of s from i on, little-endian (one load).
func word8(s string, i int) uint64 {
	s = s[i : i+8]
	return uint64(s[0]) | uint64(s[1])<<8 | uint64(s[2])<<16 | uint64(s[3])<<24 |
		uint64(s[4])<<32 | uint64(s[5])<<40 | uint64(s[6])<<48 | uint64(s[7])<<56
}

// str writes s quoted as gqlgen's string marshaler does: it escapes the
// quote, the backslash and control characters and nothing else.
func (x *fastExec) str(s string) {
	b := append(x.out, '"')
	start := 0
	for i := 0; i < len(s); i++ {
		// Eight bytes at a time while none needs escaping.
		for i+8 <= len(s) && !escapeIn8(word8(s, i)) {
			i += 8
		}
		// The last bytes in one word too, the one ending the string.
		if i >= len(s) || i+8 > len(s) && len(s) >= 8 && !escapeIn8(word8(s, len(s)-8)) {
			break
		}
		c := s[i]
		if c >= 0x20 && c != '\\' && c != '"' {
			continue
		}
		b = append(b, s[start:i]...)
		switch c {
		case '\t':
			b = append(b, `\t`...)
		case '\r':
			b = append(b, `\r`...)
		case '\n':
			b = append(b, `\n`...)
		case '\\':
			b = append(b, `\\`...)
		case '"':
			b = append(b, `\"`...)
		default:
			b = append(b, `\u00`...)
			b = append(b, hexDigits[c>>4], hexDigits[c&0xf])
		}
		start = i + 1
	}
	b = append(b, s[start:]...)
	x.set(append(b, '"'))
}

// set makes b, appended to out, the response written so far. When b is
// out's own array, grown in place, only the length changes: no pointer is
// stored, so no write barrier is taken while the collector marks.
func (x *fastExec) set(b []byte) {
	if cap(b) == cap(x.out) {
		x.out = x.out[:len(b)]
	} else {
		x.out = b
	}
}

// byte writes c.
func (x *fastExec) byte(c byte) { x.out = append(x.out, c) }

// raw writes s as it is.
func (x *fastExec) raw(s string) { x.out = append(x.out, s...) }

// marshal writes what m's MarshalGQL writes.
func (x *fastExec) marshal(m graphql.Marshaler) {
	w := bytes.NewBuffer(x.out)
	m.MarshalGQL(w)
	x.set(w.Bytes())
}
