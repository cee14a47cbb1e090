package server

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net/http"
	"path"
	"runtime/debug"
	"sort"
	"strings"

	"github.com/99designs/gqlgen/graphql"
	"github.com/99designs/gqlgen/graphql/handler"
	"github.com/vektah/gqlparser/v2/ast"
	"github.com/vektah/gqlparser/v2/gqlerror"
	"github.com/vektah/gqlparser/v2/validator/core"
	"github.com/vektah/gqlparser/v2/validator/rules"

	"github.com/incidentlib/incidentlib"
)

// ---- request ids in the log ----

// requestIDHandler adds request_id to every record logged with a request's
// context.
type requestIDHandler struct{ slog.Handler }

func withRequestIDs(l *slog.Logger) *slog.Logger {
	if _, ok := l.Handler().(requestIDHandler); ok {
		return l
	}
	return slog.New(requestIDHandler{l.Handler()})
}

func (h requestIDHandler) Handle(ctx context.Context, r slog.Record) error {
	if id := RequestID(ctx); id != "" {
		r.AddAttrs(slog.String("request_id", id))
	}
	return h.Handler.Handle(ctx, r)
}

func (h requestIDHandler) WithAttrs(as []slog.Attr) slog.Handler {
	return requestIDHandler{h.Handler.WithAttrs(as)}
}

func (h requestIDHandler) WithGroup(name string) slog.Handler {
	return requestIDHandler{h.Handler.WithGroup(name)}
}

// ---- errors ----

// presentWithRequestID is the error presenter: presentError maps the
// codes; an internal error also carries the request id (its log line has
// it too), so that a report can be matched with the log. In prod mode no
// message suggests field, argument or type names.
func (s *Server) presentWithRequestID(ctx context.Context, err error) *gqlerror.Error {
	if errors.Is(err, context.Canceled) && !errors.Is(err, context.DeadlineExceeded) {
		// The client went away: nobody reads this, and it is no internal
		// error to log.
		out := graphql.DefaultErrorPresenter(ctx, err)
		out.Message = "the request was canceled"
		out.Extensions = map[string]any{"code": CodeCanceled}
		return out
	}
	out := s.presentError(ctx, err)
	if out.Extensions == nil {
		out.Extensions = map[string]any{}
	}
	if out.Extensions["code"] == incidentlib.EINTERNAL {
		out.Extensions["requestId"] = RequestID(ctx)
	}
	// gqlgen's POST transport quotes the whole body when it cannot decode it.
	if strings.HasPrefix(out.Message, "json request body could not be decoded") {
		out.Message = "the request body is not a GraphQL request: query must be a string, variables and extensions objects"
		out.Extensions["code"] = CodeBadRequest
	}
	if s.cfg.Prod {
		out.Message = stripSuggestions(out.Message)
	}
	return out
}

// stripSuggestions cuts a "Did you mean ...?" suggestion off a message: the
// validator's rules without suggestions cover the known cases, this any
// other.
func stripSuggestions(msg string) string {
	if i := strings.Index(msg, " Did you mean"); i >= 0 {
		return msg[:i]
	}
	return msg
}

// useProd turns suggestions off in every validation rule that makes them.
func useProd(gql *handler.Server) {
	gql.SetDisableSuggestion(true) // fields on types and scalar leafs
	gql.SetValidationRulesFn(func() *rules.Rules {
		r := rules.NewDefaultRules()
		for _, swap := range []struct {
			name string
			rule core.Rule
		}{
			{rules.KnownArgumentNamesRule.Name, rules.KnownArgumentNamesRuleWithoutSuggestions},
			{rules.KnownTypeNamesRule.Name, rules.KnownTypeNamesRuleWithoutSuggestions},
			{rules.ValuesOfCorrectTypeRule.Name, rules.ValuesOfCorrectTypeRuleWithoutSuggestions},
		} {
			r.RemoveRule(swap.name)
			r.AddRule(swap.rule.Name, swap.rule.RuleFunc)
		}
		return r
	})
}

// ---- the published schema ----

// schemaSDL returns the schema files as compiled into the executable
// schema, in name order: what `*.graphqls` held at `make generate`, with
// their descriptions.
func schemaSDL(s *ast.Schema) []byte {
	srcs := map[string]string{}
	add := func(p *ast.Position) {
		if p != nil && p.Src != nil && !p.Src.BuiltIn {
			srcs[p.Src.Name] = p.Src.Input
		}
	}
	for _, t := range s.Types {
		add(t.Position)
		for _, f := range t.Fields {
			add(f.Position)
		}
		for _, v := range t.EnumValues {
			add(v.Position)
		}
	}
	for _, d := range s.Directives {
		add(d.Position)
	}
	names := make([]string, 0, len(srcs))
	for n := range srcs {
		names = append(names, n)
	}
	sort.Slice(names, func(i, j int) bool { return path.Base(names[i]) < path.Base(names[j]) })
	var b strings.Builder
	for i, n := range names {
		if i > 0 {
			b.WriteString("\n")
		}
		fmt.Fprintf(&b, "# %s\n", path.Base(n))
		b.WriteString(srcs[n])
		if !strings.HasSuffix(srcs[n], "\n") {
			b.WriteString("\n")
		}
	}
	return []byte(b.String())
}

// serveSchema publishes the schema as SDL at GET /schema.graphql, in prod
// mode too, so that client tooling works without introspection.
func (g *guard) serveSchema(w http.ResponseWriter, _ *http.Request) {
	w.Header().Set("Content-Type", "text/plain; charset=utf-8")
	w.Header().Set("Cache-Control", "public, max-age=300")
	_, _ = w.Write(g.sdl)
}

// ---- the memory limit ----

// MinMemoryLimit is the lowest Go memory limit serve accepts. A limit
// below the heap the collector needs makes it collect without end and
// still not stay under it (seed 001: a limiter set below what the garbage
// collector needed under write load got the pods OOM-killed); 10,000
// incidents with the record cache take about 100 MiB of live heap.
const MinMemoryLimit = 256 << 20

// SetMemoryLimit sets the Go runtime's soft memory limit
// (debug.SetMemoryLimit) and returns the previous one; 0 leaves the
// runtime's own setting alone (GOMEMLIMIT, unlimited unless set). It
// refuses a limit below MinMemoryLimit. Set it below the
// container's limit with room for what Go does not count (stacks of cgo,
// the page cache of the mmapped store is not counted but is reclaimable).
func SetMemoryLimit(bytes int64) (previous int64, err error) {
	if bytes == 0 {
		return debug.SetMemoryLimit(-1), nil // -1 reads it
	}
	if bytes < MinMemoryLimit {
		return 0, fmt.Errorf("the memory limit must be 0 (none) or at least %d MiB, got %d bytes: below what the collector needs it collects without end and the process is killed anyway (seed 001)", MinMemoryLimit>>20, bytes)
	}
	return debug.SetMemoryLimit(bytes), nil
}
