package graph

import (
	"bytes"
	"context"
	"errors"

	"github.com/99designs/gqlgen/graphql"
	lru "github.com/hashicorp/golang-lru/v2"
	"github.com/vektah/gqlparser/v2/ast"
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
// Whatever it does not cover (mutations, the fields named in
// FastReadsHandsOn, any field error or null in a non-null
// position, a partial read of an upstream library) it hands to gqlgen's
// executor unchanged: it bails out before writing a response, and the
// records it read stay in the request's loaders for the executor. It
// reads every level from one snapshot of the store when the resolver has
// Snapshots (reads.go). TestFastReadsDifferential compares its bytes with
// gqlgen's over queries generated from the schema, and
// TestFastReadsCoversSchema checks that it writes every field a query can
// reach or names it in FastReadsHandsOn.
type FastReads struct {
	es     *executableSchema
	r      *Resolver
	schema *fastSchema // derived from es's schema (fast_schema.go)
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
	fs, err := deriveFastSchema(s.Schema())
	if err != nil {
		return nil, err
	}
	plans, err := lru.New[planKey, *plan](sharedPlans)
	if err != nil {
		return nil, err
	}
	return &FastReads{es: s, r: r, schema: fs, plans: plans}, nil
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
		schema: f.schema,
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
	ctx    context.Context
	ls     *Loaders // the request's, in ctx
	oc     *graphql.OperationContext
	ec     *executionContext
	r      *Resolver
	schema *fastSchema
	buf    *bytes.Buffer // the response's buffer, which takes out when done
	out    []byte        // the response written so far
	// shared holds the plans that no variable changes, for every request;
	// plans those of this request that use its variables.
	shared *lru.Cache[planKey, *plan]
	plans  map[planKey]*plan
}

func bail() { panic(errBail) }

// batched returns a batch resolver's results for n objects, or bails on
// an error or an answer for another number of objects.
func batched[T any](res []T, err error, n int) []T {
	if err != nil || len(res) != n {
		bail()
	}
	return res
}

// must returns v, or bails on an error.
func must[T any](v T, err error) T {
	if err != nil {
		bail()
	}
	return v
}

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
