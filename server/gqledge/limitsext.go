package gqledge

import (
	"context"
	"crypto/sha256"
	"fmt"
	"net/http"
	"time"

	"github.com/99designs/gqlgen/graphql"
	"github.com/99designs/gqlgen/graphql/handler/extension"
	"github.com/vektah/gqlparser/v2/ast"
	"github.com/vektah/gqlparser/v2/gqlerror"
	"github.com/vektah/gqlparser/v2/parser"

	"github.com/incidentlib/incidentlib"
	"github.com/incidentlib/incidentlib/graph"
)

// limitsExtension checks each document before gqlgen validates it (token,
// depth, alias and repeat limits, and a bound on its cost that needs no
// validation), then prices the operation with gqlgen's complexity and
// charges the client's rate, and runs it under the request's deadline.
// Everything it refuses is refused before any resolver runs.
type limitsExtension struct{ g *guard }

var _ interface {
	graphql.HandlerExtension
	graphql.OperationParameterMutator
	graphql.OperationContextMutator
	graphql.OperationInterceptor
	graphql.ResponseInterceptor
} = &limitsExtension{}

func (*limitsExtension) ExtensionName() string { return "Limits" }

func (l *limitsExtension) Validate(es graphql.ExecutableSchema) error {
	l.g.es = es
	return nil
}

// MutateOperationParameters runs before gqlgen parses and validates. A
// document in the query cache passed these checks when it was added; one
// the HTTP guard checked (serveOne) is not checked twice.
//
// It then coerces the variables (coerce.go), on the request's own copy of
// them, so that gqlgen's coercion sees only values the specification
// admits.
func (l *limitsExtension) MutateOperationParameters(ctx context.Context, p *graphql.RawParams) *gqlerror.Error {
	rq, rp := requestFrom(ctx), replyFrom(ctx)
	var doc *ast.QueryDocument
	if rp != nil && rp.checked && rp.query == p.Query {
		doc = rp.doc
	} else {
		var e *gqlerror.Error
		if doc, e = l.g.checkDocument(ctx, p.Query, p.OperationName, rq, rp); e != nil {
			return e
		}
	}
	if len(p.Variables) == 0 || doc == nil || l.g.es == nil {
		return nil
	}
	return coerceVariables(l.g.es.Schema(), doc, p.OperationName, p.Variables)
}

// checkDocument checks a document before it is validated: the method, the
// token limit, then its shape (measure). Refusals that depend on the
// document alone are remembered. It returns the parsed document (nil when
// it does not parse: gqlgen reports the syntax error).
func (g *guard) checkDocument(ctx context.Context, query, opName string, rq *request, rp *reply) (*ast.QueryDocument, *gqlerror.Error) {
	if doc, ok := g.cache.Get(ctx, query); ok {
		return doc, checkMethod(doc, opName, rq, rp)
	}
	sum := sha256.Sum256([]byte(query))
	key := string(sum[:])
	if e, ok := g.refused.Get(ctx, key); ok {
		return nil, refuseDocument(e, rp)
	}
	lim := g.lim
	if n := countTokens(query, lim.MaxTokens); n > lim.MaxTokens {
		e := refusal(CodeTokenLimit, fmt.Sprintf("the document has more than %d tokens", lim.MaxTokens), map[string]any{"limit": lim.MaxTokens})
		g.refused.Add(ctx, key, e)
		return nil, refuseDocument(e, rp)
	}
	doc, err := parser.ParseQuery(&ast.Source{Input: query})
	if err != nil {
		return nil, nil // gqlgen parses it again and reports the syntax error
	}
	if e := checkMethod(doc, opName, rq, rp); e != nil {
		return nil, e
	}
	if e := measure(doc, lim); e != nil {
		g.refused.Add(ctx, key, e)
		return nil, refuseDocument(e, rp)
	}
	return doc, nil
}

// refuseDocument returns a copy of a remembered refusal (gqlgen adds to
// the errors it is given) and reports its cost, a lower bound, when it is
// over the cost limit.
func refuseDocument(e *gqlerror.Error, rp *reply) *gqlerror.Error {
	c := *e
	c.Extensions = make(map[string]any, len(e.Extensions))
	for k, v := range e.Extensions {
		c.Extensions[k] = v
	}
	if rp != nil && c.Extensions["code"] == CodeCostLimit {
		rp.cost, _ = c.Extensions["cost"].(int)
	}
	return &c
}

// checkMethod refuses a mutation or subscription sent with GET: 405 with
// Allow: POST.
func checkMethod(doc *ast.QueryDocument, opName string, rq *request, rp *reply) *gqlerror.Error {
	if rq == nil || !rq.get {
		return nil
	}
	op := doc.Operations.ForName(opName)
	if op == nil || op.Operation == ast.Query {
		return nil
	}
	if rp != nil {
		rp.status = http.StatusMethodNotAllowed
		rp.header.Set("Allow", "POST")
	}
	return refusal(CodeMethodNotAllowed, "only queries may be sent with GET; send a "+string(op.Operation)+" with POST", nil)
}

// MutateOperationContext prices the validated operation with gqlgen's
// complexity, refuses it over the limit, and charges the client's rate.
func (l *limitsExtension) MutateOperationContext(ctx context.Context, opCtx *graphql.OperationContext) *gqlerror.Error {
	lim := l.g.lim
	if opCtx.DisableIntrospection && introspects(opCtx.Operation.SelectionSet, map[string]bool{}) {
		return refusal(CodeIntrospectionOff, "introspection is off on this server; the schema is published at /schema.graphql", nil)
	}
	rq, rp := requestFrom(ctx), replyFrom(ctx)
	// The body says the document, the operation and the variables, so its
	// operation's cost is computed once per body.
	var cost int
	if rp != nil && rp.body != nil && rp.body.costPlus1.Load() > 0 {
		cost = int(rp.body.costPlus1.Load() - 1)
	} else {
		cost = graph.Cost(ctx, l.g.es, opCtx.Operation, opCtx.Variables) // a connection's page once (graph/cost.go)
		if rp != nil && rp.body != nil {
			rp.body.costPlus1.Store(int64(cost) + 1)
		}
	}
	opCtx.Stats.SetExtension("ComplexityLimit", &extension.ComplexityStats{Complexity: cost, ComplexityLimit: lim.MaxCost})
	if rp != nil {
		rp.cost = cost
	}
	if cost > lim.MaxCost {
		return costRefusal(cost, lim.MaxCost, false)
	}
	if rq == nil {
		return nil
	}
	rq.mu.Lock()
	defer rq.mu.Unlock()
	if rq.spent+cost > lim.MaxCost {
		e := costRefusal(cost, lim.MaxCost, false)
		e.Message = fmt.Sprintf("the operations of this batch cost %d together, over the limit of %d", rq.spent+cost, lim.MaxCost)
		e.Extensions["batchCost"] = rq.spent + cost
		return e
	}
	if l.g.rate != nil {
		if ok, retry := l.g.rate.take(rq.client, cost); !ok {
			if rp != nil {
				rp.status = http.StatusTooManyRequests
				rp.header.Set("Retry-After", retryAfter(retry))
			}
			return refusal(CodeRateLimited, "too many requests: this operation costs more than the client has left",
				map[string]any{"cost": cost, "retryAfter": retrySeconds(retry)})
		}
	}
	rq.spent += cost
	return nil
}

// introspects says whether a root selection set asks for __schema or
// __type, which gqlgen would answer with an error that is not a domain
// error once the operation runs.
func introspects(sel ast.SelectionSet, seen map[string]bool) bool {
	for _, s := range sel {
		switch s := s.(type) {
		case *ast.Field:
			if s.Name == "__schema" || s.Name == "__type" {
				return true
			}
		case *ast.InlineFragment:
			if introspects(s.SelectionSet, seen) {
				return true
			}
		case *ast.FragmentSpread:
			if s.Definition != nil && !seen[s.Name] {
				seen[s.Name] = true
				if introspects(s.Definition.SelectionSet, seen) {
					return true
				}
			}
		}
	}
	return false
}

func costRefusal(cost, limit int, atLeast bool) *gqlerror.Error {
	msg := fmt.Sprintf("the operation costs %d, over the limit of %d", cost, limit)
	if atLeast {
		msg = fmt.Sprintf("the operation costs at least %d, over the limit of %d", cost, limit)
	}
	return refusal(CodeCostLimit, msg, map[string]any{"cost": cost, "limit": limit})
}

// InterceptOperation runs the operation under the request's deadline. The
// deadline goes on the context of the execution, not of the whole HTTP
// request: gqlgen answers nothing at all for an operation whose context is
// already done when it starts, where a TIMEOUT error is the answer.
func (l *limitsExtension) InterceptOperation(ctx context.Context, next graphql.OperationHandler) graphql.ResponseHandler {
	rq := requestFrom(ctx)
	h := next(ctx)
	if rq == nil {
		return h
	}
	return func(ctx context.Context) *graphql.Response {
		if !time.Now().Before(rq.deadline) {
			return timeoutResponse(ctx)
		}
		dctx, cancel := context.WithDeadline(ctx, rq.deadline)
		defer cancel()
		resp := h(dctx)
		if resp == nil && ctx.Err() == nil && dctx.Err() != nil {
			return timeoutResponse(ctx)
		}
		if resp != nil {
			// An interceptor inside this one may answer by itself, without
			// the response interceptors (the write guard's refusals).
			if _, ok := resp.Extensions["cost"]; !ok {
				if resp.Extensions == nil {
					resp.Extensions = map[string]any{}
				}
				resp.Extensions["cost"] = costOf(ctx)
			}
		}
		return resp
	}
}

func costOf(ctx context.Context) int {
	if rp := replyFrom(ctx); rp != nil {
		return rp.cost
	}
	return 0
}

func timeoutResponse(ctx context.Context) *graphql.Response {
	return &graphql.Response{
		Errors:     gqlerror.List{refusal(incidentlib.ETIMEOUT, "the request ran out of time", nil)},
		Extensions: map[string]any{"cost": costOf(ctx)},
	}
}

// InterceptResponse reports the operation's cost in extensions.cost: 0
// when it was refused before it could be priced.
func (l *limitsExtension) InterceptResponse(ctx context.Context, next graphql.ResponseHandler) *graphql.Response {
	if rp := replyFrom(ctx); rp != nil && !rp.registered {
		rp.registered = true
		graphql.RegisterExtension(ctx, "cost", rp.cost)
	}
	return next(ctx)
}
