package server

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"mime"
	"net/http"
	"net/url"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/99designs/gqlgen/complexity"
	"github.com/99designs/gqlgen/graphql"
	"github.com/99designs/gqlgen/graphql/errcode"
	"github.com/99designs/gqlgen/graphql/handler"
	"github.com/99designs/gqlgen/graphql/handler/extension"
	"github.com/99designs/gqlgen/graphql/handler/lru"
	"github.com/vektah/gqlparser/v2/ast"
	"github.com/vektah/gqlparser/v2/gqlerror"
	"github.com/vektah/gqlparser/v2/lexer"
	"github.com/vektah/gqlparser/v2/parser"

	"github.com/incidentlib/incidentlib"
)

// Codes of the requests the server refuses before it runs them, in
// extensions.code. TIMEOUT (incidentlib.ETIMEOUT) is the code of a request
// that ran out of time.
const (
	CodeCostLimit            = "COST_LIMIT"
	CodeDepthLimit           = "DEPTH_LIMIT"
	CodeAliasLimit           = "ALIAS_LIMIT"
	CodeRepeatLimit          = "REPEAT_LIMIT"
	CodeTokenLimit           = "TOKEN_LIMIT"
	CodeBodyTooLarge         = "BODY_TOO_LARGE"
	CodeBatchLimit           = "BATCH_LIMIT"
	CodeRateLimited          = "RATE_LIMITED"
	CodeBadRequest           = incidentlib.EBADQUERY
	CodeMethodNotAllowed     = "METHOD_NOT_ALLOWED"
	CodeNotAcceptable        = "NOT_ACCEPTABLE"
	CodeUnsupportedMediaType = "UNSUPPORTED_MEDIA_TYPE"
	CodeIntrospectionOff     = "INTROSPECTION_DISABLED"
	// CodeCanceled: the client went away before the answer.
	CodeCanceled = "CANCELED"
)

func init() {
	// The GraphQL-level refusals are request errors, like parse and
	// validation errors: 400 with application/graphql-response+json.
	for _, c := range []string{CodeCostLimit, CodeDepthLimit, CodeAliasLimit, CodeRepeatLimit, CodeTokenLimit, CodeRateLimited, CodeMethodNotAllowed, CodeIntrospectionOff} {
		errcode.RegisterErrorType(c, errcode.KindProtocol)
	}
}

// Limits bound what one HTTP request may ask of the server. A zero field
// takes its default; a negative one is refused.
type Limits struct {
	// MaxCost is the largest cost (gqlgen complexity, see graph.Complexity)
	// of one request; a batch shares it among its operations.
	MaxCost int
	// MaxDepth is the deepest nesting of fields, fragments expanded.
	// Introspection (__schema, __type) is bounded by the validator's own
	// introspection depth rule instead.
	MaxDepth int
	// MaxAliases is how many aliased fields a document may hold, fragments
	// expanded.
	MaxAliases int
	// MaxTokens is the parser's token limit for one document.
	MaxTokens int
	// MaxBody is the largest request body, in bytes.
	MaxBody int64
	// MaxBatch is how many operations one POST may carry as a JSON array.
	MaxBatch int
	// RequestTimeout is the deadline of each request, from its arrival;
	// resolvers, dataloaders and the store see it.
	RequestTimeout time.Duration
}

// The default limits: safe for a public endpoint, and every query of the
// README and the tests passes them (the list page of the N+1 proof at
// first: 100 costs 4,601; the README's list page at first: 20 costs 5,341).
const (
	DefaultMaxCost        = 20_000
	DefaultMaxDepth       = 12
	DefaultMaxAliases     = 30
	DefaultMaxTokens      = 2_000
	DefaultMaxBody        = 1 << 20
	DefaultMaxBatch       = 10
	DefaultRequestTimeout = 10 * time.Second
)

// MaxRepeats is how many times one response name may be selected in one
// selection set, fragments merged into it. It is fixed, not configured:
// the validator compares every pair of fields under one response name, so
// a thousand repeats of one field, within any token limit, take it seconds;
// a real query repeats a name a few times at most.
const MaxRepeats = 16

// DefaultLimits returns the defaults.
func DefaultLimits() Limits {
	return Limits{
		MaxCost: DefaultMaxCost, MaxDepth: DefaultMaxDepth, MaxAliases: DefaultMaxAliases,
		MaxTokens: DefaultMaxTokens, MaxBody: DefaultMaxBody, MaxBatch: DefaultMaxBatch,
		RequestTimeout: DefaultRequestTimeout,
	}
}

func (l *Limits) withDefaults() error {
	d := DefaultLimits()
	ints := []struct {
		name   string
		p      *int
		def    int
		suffix string
	}{
		{"cost", &l.MaxCost, d.MaxCost, ""}, {"depth", &l.MaxDepth, d.MaxDepth, ""},
		{"aliases", &l.MaxAliases, d.MaxAliases, ""}, {"tokens", &l.MaxTokens, d.MaxTokens, ""},
		{"batch", &l.MaxBatch, d.MaxBatch, ""},
	}
	for _, f := range ints {
		if *f.p < 0 {
			return fmt.Errorf("the %s limit must not be negative, got %d", f.name, *f.p)
		}
		if *f.p == 0 {
			*f.p = f.def
		}
	}
	if l.MaxBody < 0 || l.RequestTimeout < 0 {
		return errors.New("the body limit and the request timeout must not be negative")
	}
	if l.MaxBody == 0 {
		l.MaxBody = d.MaxBody
	}
	if l.RequestTimeout == 0 {
		l.RequestTimeout = d.RequestTimeout
	}
	return nil
}

// guard is the server's defence against hostile and careless clients: the
// HTTP checks, the gqlgen extension with the document limits and the cost,
// the request deadline, the rate limiter, CORS and the published schema.
type guard struct {
	s       *Server
	lim     Limits
	es      graphql.ExecutableSchema
	cache   graphql.Cache[*ast.QueryDocument]
	rate    *rateLimiter
	proxy   string // trusted proxy header
	origins origins
	sdl     []byte
	// refused keeps, by the SHA-256 of the document, the refusals that
	// depend on the document alone, so that a client repeating one hostile
	// document is refused without parsing it again.
	refused *lru.LRU[*gqlerror.Error]
}

// refusedCacheSize is how many refused documents the guard remembers.
const refusedCacheSize = 1000

// request is the state of one HTTP request, shared by the operations of a
// batch.
type request struct {
	client   string
	deadline time.Time
	get      bool

	mu    sync.Mutex
	spent int // cost admitted so far
}

// reply is the state of one operation's response: the status and headers
// the guard decided on, and the cost.
type reply struct {
	status     int
	header     http.Header
	cost       int
	registered bool
	// checked: the HTTP guard checked query already.
	checked bool
	query   string
	// body is the decoded POST body, which keeps its operation's cost.
	body *decodedBody
}

type requestKey struct{}
type replyKey struct{}

func requestFrom(ctx context.Context) *request {
	rq, _ := ctx.Value(requestKey{}).(*request)
	return rq
}

func replyFrom(ctx context.Context) *reply {
	rp, _ := ctx.Value(replyKey{}).(*reply)
	return rp
}

// useGuard configures gql and the server with the limits of cfg.
func (s *Server) useGuard(gql *handler.Server, cache graphql.Cache[*ast.QueryDocument]) error {
	lim := s.cfg.Limits
	if err := lim.withDefaults(); err != nil {
		return err
	}
	g := &guard{s: s, lim: lim, cache: cache, proxy: s.cfg.RateLimit.TrustedProxyHeader, refused: lru.New[*gqlerror.Error](refusedCacheSize)}
	rate, err := newRateLimiter(s.cfg.RateLimit, lim.MaxCost)
	if err != nil {
		return err
	}
	g.rate = rate
	if g.origins, err = parseOrigins(s.cfg.CORSOrigins); err != nil {
		return err
	}
	// A backstop: the guard counts the tokens first.
	gql.SetParserTokenLimit(lim.MaxTokens + 1)
	// Validate hands the extension the executable schema.
	gql.Use(&limitsExtension{g})
	g.sdl = schemaSDL(g.es.Schema())
	if s.cfg.Prod {
		useProd(gql)
	}
	for _, e := range s.cfg.Extensions {
		gql.Use(e)
	}
	s.guard = g
	return nil
}

// ---- HTTP ----

// graphqlHTTP checks what can be checked before a GraphQL document is
// read: the method, the media types, the client's rate, the body's size
// and the batch; it sets the request's deadline and serves a batch one
// operation after the other.
//
// When next is the response cache (a hitServer), a request whose response
// it holds is answered as soon as these HTTP checks have passed, before
// the document is decoded and checked (serveOne): a cache hit costs no JSON
// decoding. That refuses nothing that would be refused otherwise:
//
//   - Every check of the HTTP request itself has run on it: the method,
//     Accept, Content-Type, the client's rate (a hit is not charged, but an
//     empty bucket refuses it), the body's size. A GET's parameters are
//     checked below only for a query string the cache has not read before:
//     the cache reads (and remembers, by its exact bytes) only query
//     strings that passed these checks, which depend on the string alone.
//   - The cache holds only responses of queries that ran without errors,
//     under a key made of everything the document checks and the execution
//     read: the document (its hash; with trusted documents, the hash of the
//     listed document an id names), the operation name, the variables, the
//     language and the Accept, Authorization and Origin headers. A hit is
//     therefore a request whose document, operation and variables passed
//     the token, depth, alias, repeat, cost, introspection and trusted
//     document checks, under the same limits (fixed for the server's
//     life); and, being a query, it is allowed by GET.
//   - What the cache cannot vouch for goes the usual way: a request it has
//     not read before, a persisted id that is not a trusted document, an id
//     sent with a text it does not name or a persisted-query extension APQ
//     refuses (respcache.go, parseRequest), and a batch. (An APQ hash alone
//     is answered from the entry of its document even when APQ's own LRU
//     has forgotten the document: the hash is the document's SHA-256, so it
//     names exactly the document that entry ran, and anyone may register
//     any document with APQ.)
func (g *guard) graphqlHTTP(next http.Handler) http.Handler {
	hits, _ := next.(hitServer)
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		switch r.Method {
		case http.MethodGet, http.MethodPost:
		case http.MethodOptions:
			next.ServeHTTP(w, r)
			return
		default:
			w.Header().Set("Allow", "GET, POST, OPTIONS")
			refuse(w, mediaJSON, http.StatusMethodNotAllowed, CodeMethodNotAllowed, "send GraphQL requests with GET (queries) or POST", nil)
			return
		}
		ct := negotiate(r.Header.Values("Accept"))
		if ct == "" {
			refuse(w, mediaJSON, http.StatusNotAcceptable, CodeNotAcceptable,
				"the response is application/graphql-response+json or application/json; the Accept header allows neither", nil)
			return
		}
		r.Header.Set("Accept", ct) // gqlgen's transports pick the same
		if r.Method == http.MethodPost && !isJSONMediaType(r.Header.Get("Content-Type")) {
			refuse(w, ct, http.StatusUnsupportedMediaType, CodeUnsupportedMediaType, "POST a GraphQL request as application/json", nil)
			return
		}
		rq := &request{deadline: time.Now().Add(g.lim.RequestTimeout), get: r.Method == http.MethodGet}
		if g.rate != nil {
			rq.client = clientKey(r, g.proxy)
			if ok, retry := g.rate.admits(rq.client); !ok {
				w.Header().Set("Retry-After", retryAfter(retry))
				refuse(w, ct, http.StatusTooManyRequests, CodeRateLimited, "too many requests: the client has used its cost per second",
					map[string]any{"retryAfter": retrySeconds(retry)})
				return
			}
		}
		if r.Method == http.MethodGet {
			if hits != nil && hits.serveHit(w, r, nil) {
				return
			}
			// gqlgen's GET answers malformed parameters without a code.
			q, err := url.ParseQuery(r.URL.RawQuery)
			if err != nil {
				refuse(w, ct, http.StatusBadRequest, CodeBadRequest, "the query string is malformed", nil)
				return
			}
			for _, p := range []string{"variables", "extensions"} {
				if v := q.Get(p); v != "" && (!isJSONObject([]byte(v)) || !json.Valid([]byte(v))) {
					refuse(w, ct, http.StatusBadRequest, CodeBadRequest, p+" must be a JSON object", nil)
					return
				}
			}
		}
		var body []byte
		if r.Method == http.MethodPost {
			tooLarge := func() {
				refuse(w, ct, http.StatusRequestEntityTooLarge, CodeBodyTooLarge,
					fmt.Sprintf("the request body is larger than %d bytes", g.lim.MaxBody), map[string]any{"limit": g.lim.MaxBody})
			}
			if r.ContentLength > g.lim.MaxBody {
				tooLarge()
				return
			}
			var err error
			body, err = readBody(w, r, g.lim.MaxBody)
			if err != nil {
				var mbe *http.MaxBytesError
				if errors.As(err, &mbe) {
					tooLarge()
					return
				}
				refuse(w, ct, http.StatusBadRequest, CodeBadRequest, "the request body could not be read", nil)
				return
			}
			if hits != nil && isJSONObject(body) && hits.serveHit(w, r, body) {
				return
			}
		}
		r = r.WithContext(context.WithValue(r.Context(), requestKey{}, rq))
		if r.Method == http.MethodPost {
			trimmed := bytes.TrimLeft(body, " \t\r\n")
			if len(trimmed) > 0 && trimmed[0] == '[' {
				g.serveBatch(w, r, next, body, ct)
				return
			}
			if !isJSONObject(body) {
				refuse(w, ct, http.StatusBadRequest, CodeBadRequest, "the request body must be a JSON object: a GraphQL request", nil)
				return
			}
		}
		g.serveOne(w, r, next, body)
	})
}

// hitServer is the response cache as the guard sees it (respcache.go):
// serveHit answers a request from the cache and returns true, or writes
// nothing and returns false. body is a POST's body (the cache reads a
// GET's query string itself).
type hitServer interface {
	serveHit(w http.ResponseWriter, r *http.Request, body []byte) bool
}

// isJSONMediaType says whether a Content-Type is application/json, in
// UTF-8 if it names a charset.
func isJSONMediaType(v string) bool {
	if v == mediaJSON { // what nearly every client sends: nothing to parse
		return true
	}
	mt, params, err := mime.ParseMediaType(v)
	return err == nil && mt == mediaJSON && (params["charset"] == "" || strings.EqualFold(params["charset"], "utf-8"))
}

// isJSONObject is a cheap first look: the body opens an object. gqlgen's
// decoder checks the rest (and the error presenter words its complaint).
func isJSONObject(b []byte) bool {
	t := bytes.TrimLeft(b, " \t\r\n")
	return len(t) > 0 && t[0] == '{'
}

// readBody reads the body up to limit bytes, into one buffer of the
// announced length when there is one.
func readBody(w http.ResponseWriter, r *http.Request, limit int64) ([]byte, error) {
	rd := http.MaxBytesReader(w, r.Body, limit)
	if r.ContentLength <= 0 {
		return io.ReadAll(rd)
	}
	buf := make([]byte, r.ContentLength)
	if _, err := io.ReadFull(rd, buf); err != nil {
		return nil, err
	}
	return buf, nil
}

// serveOne serves one operation; body replaces the request's body when
// the request is a POST.
//
// A document the guard refuses is refused here, before gqlgen and the
// response cache decode the body again: the refusal of a large hostile
// document costs one decoding of its body, not three.
func (g *guard) serveOne(w http.ResponseWriter, r *http.Request, next http.Handler, body []byte) {
	rp := &reply{header: http.Header{}}
	ctx := context.WithValue(r.Context(), replyKey{}, rp)
	r = r.WithContext(ctx)
	var p struct {
		Query, OperationName string
		Variables            func() string // for the debug log
	}
	decoded := false
	if r.Method == http.MethodPost {
		// As the POST transport decodes it, once for both (decodeParams).
		if d, err := sharedParams(&g.s.params, body); err == nil {
			params := &d.params
			p.Query, p.OperationName, decoded = params.Query, params.OperationName, true
			p.Variables = func() string {
				b, _ := json.Marshal(params.Variables)
				return string(b)
			}
		}
		r.Body = io.NopCloser(bytes.NewReader(body))
		r.ContentLength = int64(len(body))
	} else {
		q := r.URL.Query()
		p.Query, p.OperationName, decoded = q.Get("query"), q.Get("operationName"), true
		p.Variables = func() string { return q.Get("variables") }
	}
	if decoded && p.Query != "" {
		if e := g.checkDocument(ctx, p.Query, p.OperationName, requestFrom(ctx), rp); e != nil {
			if st := stateOf(ctx); st != nil && st.debug { // the request log, as the response cache sets it
				st.queryPrefix = truncate(p.Query, logPrefixBytes)
				st.varsPrefix = truncate(p.Variables(), logPrefixBytes)
			}
			g.refuseEarly(w, r, rp, p.OperationName, e)
			return
		}
		rp.checked, rp.query = true, p.Query
	}
	next.ServeHTTP(&replyWriter{ResponseWriter: w, reply: rp}, r)
}

// refuseEarly answers a refusal of the document guard as gqlgen would have:
// 400 (200 as application/json), or the status the guard chose, with the
// error, data null and extensions.cost.
func (g *guard) refuseEarly(w http.ResponseWriter, r *http.Request, rp *reply, opName string, e *gqlerror.Error) {
	ct := r.Header.Get("Accept") // graphqlHTTP set it to the negotiated type
	status := rp.status
	if status == 0 {
		status = http.StatusBadRequest
		if ct == mediaJSON {
			status = http.StatusOK
		}
	}
	for k, v := range rp.header {
		w.Header()[k] = v
	}
	code, _ := e.Extensions["code"].(string)
	if m := g.s.Metrics; m != nil {
		m.opErrors.WithLabelValues(m.operationLabel(opName), code).Inc()
	}
	if st := stateOf(r.Context()); st != nil {
		st.op, st.cost = opName, rp.cost
	}
	out, _ := json.Marshal(graphql.Response{Errors: gqlerror.List{e}, Extensions: map[string]any{"cost": rp.cost}})
	w.Header().Set("Content-Type", ct)
	w.WriteHeader(status)
	_, _ = w.Write(out)
}

// serveBatch serves a JSON array of operations one after the other and
// answers a JSON array of their responses. The operations share the
// request's cost limit and deadline.
func (g *guard) serveBatch(w http.ResponseWriter, r *http.Request, next http.Handler, body []byte, ct string) {
	var ops []json.RawMessage
	if err := json.Unmarshal(body, &ops); err != nil {
		refuse(w, ct, http.StatusBadRequest, CodeBadRequest, "the request body is not a JSON array of GraphQL requests", nil)
		return
	}
	if len(ops) == 0 {
		refuse(w, ct, http.StatusBadRequest, CodeBadRequest, "the batch is empty", nil)
		return
	}
	if len(ops) > g.lim.MaxBatch {
		refuse(w, ct, http.StatusBadRequest, CodeBatchLimit,
			fmt.Sprintf("the batch holds %d operations; at most %d are allowed", len(ops), g.lim.MaxBatch),
			map[string]any{"count": len(ops), "limit": g.lim.MaxBatch})
		return
	}
	var out bytes.Buffer
	out.WriteByte('[')
	for i, op := range ops {
		if i > 0 {
			out.WriteByte(',')
		}
		if !isJSONObject(op) {
			writeRefusalBody(&out, CodeBadRequest, "each element of a batch must be a JSON object: a GraphQL request", nil)
			continue
		}
		rec := &bufferWriter{header: http.Header{}}
		g.serveOne(rec, r.Clone(r.Context()), next, op)
		if b := bytes.TrimSpace(rec.body.Bytes()); len(b) > 0 {
			out.Write(b)
		} else {
			out.WriteString("null")
		}
	}
	out.WriteByte(']')
	w.Header().Set("Content-Type", ct)
	w.WriteHeader(http.StatusOK)
	_, _ = w.Write(out.Bytes())
}

// replyWriter applies the status and headers the guard decided on when
// gqlgen writes its status, and the GraphQL-over-HTTP status codes where
// gqlgen differs: a well-formed request answered as application/json gets
// 200 even when the document does not validate (gqlgen sends 422).
type replyWriter struct {
	http.ResponseWriter
	reply *reply
	wrote bool
}

func (w *replyWriter) WriteHeader(code int) {
	if w.wrote {
		return
	}
	w.wrote = true
	if w.reply.status != 0 {
		code = w.reply.status
	} else if code == http.StatusUnprocessableEntity {
		code = http.StatusOK
	}
	for k, v := range w.reply.header {
		w.Header()[k] = v
	}
	w.ResponseWriter.WriteHeader(code)
}

func (w *replyWriter) Write(b []byte) (int, error) {
	if !w.wrote {
		w.WriteHeader(http.StatusOK)
	}
	return w.ResponseWriter.Write(b)
}

func (w *replyWriter) Unwrap() http.ResponseWriter { return w.ResponseWriter }

// bufferWriter keeps one operation's response of a batch.
type bufferWriter struct {
	header http.Header
	body   bytes.Buffer
}

func (b *bufferWriter) Header() http.Header         { return b.header }
func (b *bufferWriter) Write(p []byte) (int, error) { return b.body.Write(p) }
func (b *bufferWriter) WriteHeader(int)             {}

const (
	mediaGraphQLResponse = "application/graphql-response+json"
	mediaJSON            = "application/json"
)

// negotiate picks the response's media type from the Accept header:
// application/graphql-response+json unless the client prefers
// application/json; "" when it accepts neither.
func negotiate(accept []string) string {
	if len(accept) == 1 { // the common headers, without parsing them
		switch accept[0] {
		case mediaGraphQLResponse, "*/*", mediaGraphQLResponse + ", " + mediaJSON:
			return mediaGraphQLResponse
		case mediaJSON:
			return mediaJSON
		}
	}
	best, bestQ := "", 0.0
	seen := false
	for _, h := range accept {
		for part := range strings.SplitSeq(h, ",") {
			part = strings.TrimSpace(part)
			if part == "" {
				continue
			}
			seen = true
			mt, params, err := mime.ParseMediaType(part)
			if err != nil {
				continue
			}
			q := 1.0
			if v, ok := params["q"]; ok {
				if f, err := strconv.ParseFloat(v, 64); err == nil && f >= 0 && f <= 1 {
					q = f
				}
			}
			var cand string
			switch mt {
			case mediaGraphQLResponse, "*/*", "application/*":
				cand = mediaGraphQLResponse
			case mediaJSON:
				cand = mediaJSON
			default:
				continue
			}
			if q > bestQ || (q == bestQ && cand == mediaGraphQLResponse && best != mediaGraphQLResponse && mt == mediaGraphQLResponse) {
				best, bestQ = cand, q
			}
		}
	}
	if !seen {
		return mediaGraphQLResponse
	}
	return best
}

// refuse answers a request the guard refuses before GraphQL runs.
func refuse(w http.ResponseWriter, contentType string, status int, code, msg string, ext map[string]any) {
	w.Header().Set("Content-Type", contentType)
	w.WriteHeader(status)
	var b bytes.Buffer
	writeRefusalBody(&b, code, msg, ext)
	_, _ = w.Write(b.Bytes())
}

func writeRefusalBody(b *bytes.Buffer, code, msg string, ext map[string]any) {
	e := map[string]any{"code": code}
	for k, v := range ext {
		e[k] = v
	}
	resp := graphql.Response{
		Errors:     gqlerror.List{{Message: msg, Extensions: e}},
		Extensions: map[string]any{"cost": 0},
	}
	out, _ := json.Marshal(resp)
	b.Write(out)
}

func refusal(code, msg string, ext map[string]any) *gqlerror.Error {
	e := map[string]any{"code": code}
	for k, v := range ext {
		e[k] = v
	}
	return &gqlerror.Error{Message: msg, Extensions: e}
}

// ---- the gqlgen extension ----

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
func (l *limitsExtension) MutateOperationParameters(ctx context.Context, p *graphql.RawParams) *gqlerror.Error {
	rq, rp := requestFrom(ctx), replyFrom(ctx)
	if rp != nil && rp.checked && rp.query == p.Query {
		return nil
	}
	return l.g.checkDocument(ctx, p.Query, p.OperationName, rq, rp)
}

// checkDocument checks a document before it is validated: the method, the
// token limit, then its shape (measure). Refusals that depend on the
// document alone are remembered.
func (g *guard) checkDocument(ctx context.Context, query, opName string, rq *request, rp *reply) *gqlerror.Error {
	if doc, ok := g.cache.Get(ctx, query); ok {
		return checkMethod(doc, opName, rq, rp)
	}
	sum := sha256.Sum256([]byte(query))
	key := string(sum[:])
	if e, ok := g.refused.Get(ctx, key); ok {
		return refuseDocument(e, rp)
	}
	lim := g.lim
	if n := countTokens(query, lim.MaxTokens); n > lim.MaxTokens {
		e := refusal(CodeTokenLimit, fmt.Sprintf("the document has more than %d tokens", lim.MaxTokens), map[string]any{"limit": lim.MaxTokens})
		g.refused.Add(ctx, key, e)
		return refuseDocument(e, rp)
	}
	doc, err := parser.ParseQuery(&ast.Source{Input: query})
	if err != nil {
		return nil // gqlgen parses it again and reports the syntax error
	}
	if e := checkMethod(doc, opName, rq, rp); e != nil {
		return e
	}
	if e := measure(doc, lim); e != nil {
		g.refused.Add(ctx, key, e)
		return refuseDocument(e, rp)
	}
	return nil
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
		cost = complexity.Calculate(ctx, l.g.es, opCtx.Operation, opCtx.Variables)
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

// countTokens counts the document's tokens, up to limit+1.
func countTokens(q string, limit int) int {
	lx := lexer.New(&ast.Source{Input: q})
	n := 0
	for n <= limit {
		tok, err := lx.ReadToken()
		if err != nil || tok.Kind == lexer.EOF {
			break
		}
		n++
	}
	return n
}

// shape is what the guard knows of a selection set, fragments expanded:
// its depth, its aliased fields, its fields (a lower bound of its cost,
// since gqlgen prices every field at 1 or more), and how often each
// response name is selected at its top level.
type shape struct {
	depth, aliases, fields int
	names                  map[string]int
}

type measurer struct {
	lim      Limits
	frags    map[string]*ast.FragmentDefinition
	memo     map[string]*shape
	visiting map[string]bool
	err      *gqlerror.Error
}

// measure checks every operation and fragment of a parsed, unvalidated
// document against the limits, each operation on its own. Each fragment is measured once, so a chain
// of fragments that doubles at each step costs its length, not its
// expansion; a fragment cycle counts as empty (the validator refuses it).
func measure(doc *ast.QueryDocument, lim Limits) *gqlerror.Error {
	m := &measurer{
		lim:      lim,
		frags:    make(map[string]*ast.FragmentDefinition, len(doc.Fragments)),
		memo:     map[string]*shape{},
		visiting: map[string]bool{},
	}
	for _, f := range doc.Fragments {
		if _, dup := m.frags[f.Name]; !dup {
			m.frags[f.Name] = f
		}
	}
	for _, op := range doc.Operations {
		m.set(op.SelectionSet, false)
		if m.err != nil {
			return m.err
		}
	}
	// Fragments no operation uses are validated too (and refused as unused):
	// they must not be slow to validate either.
	for _, f := range doc.Fragments {
		m.fragment(f.Name)
		if m.err != nil {
			return m.err
		}
	}
	return nil
}

func (m *measurer) check(sh *shape) *gqlerror.Error {
	switch {
	case sh.aliases > m.lim.MaxAliases:
		return refusal(CodeAliasLimit, fmt.Sprintf("the document has more than %d aliased fields", m.lim.MaxAliases),
			map[string]any{"limit": m.lim.MaxAliases})
	case sh.fields > m.lim.MaxCost:
		return costRefusal(sh.fields, m.lim.MaxCost, true)
	}
	return nil
}

func (m *measurer) fragment(name string) *shape {
	if sh, ok := m.memo[name]; ok {
		return sh
	}
	def := m.frags[name]
	if def == nil || m.visiting[name] {
		return &shape{}
	}
	m.visiting[name] = true
	sh := m.set(def.SelectionSet, false)
	delete(m.visiting, name)
	m.memo[name] = sh
	return sh
}

// set measures a selection set; inIntro is true below __schema or __type.
func (m *measurer) set(sel ast.SelectionSet, inIntro bool) *shape {
	sh := &shape{names: map[string]int{}}
	merge := func(sub *shape) {
		sh.depth = max(sh.depth, sub.depth)
		sh.aliases = satAdd(sh.aliases, sub.aliases)
		sh.fields = satAdd(sh.fields, sub.fields)
		for k, n := range sub.names {
			if m.count(sh, k, n) {
				return
			}
		}
	}
	for _, s := range sel {
		if m.err != nil {
			return sh
		}
		switch s := s.(type) {
		case *ast.Field:
			key := s.Alias
			if key == "" {
				key = s.Name
			}
			if m.count(sh, key, 1) {
				return sh
			}
			if key != s.Name {
				sh.aliases = satAdd(sh.aliases, 1)
			}
			intro := inIntro || s.Name == "__schema" || s.Name == "__type"
			var child *shape
			if len(s.SelectionSet) > 0 {
				child = m.set(s.SelectionSet, intro)
				if m.err != nil {
					return sh
				}
			} else {
				child = &shape{}
			}
			sh.aliases = satAdd(sh.aliases, child.aliases)
			if s.Name != "__schema" { // gqlgen's complexity leaves __schema out
				sh.fields = satAdd(sh.fields, satAdd(1, child.fields))
			}
			d := 1
			if !intro {
				d = satAdd(1, child.depth)
			}
			sh.depth = max(sh.depth, d)
		case *ast.InlineFragment:
			merge(m.set(s.SelectionSet, inIntro))
		case *ast.FragmentSpread:
			merge(m.fragment(s.Name))
		}
		if m.err != nil {
			return sh
		}
		if sh.depth > m.lim.MaxDepth {
			m.err = refusal(CodeDepthLimit, fmt.Sprintf("the document nests fields more than %d deep", m.lim.MaxDepth),
				map[string]any{"limit": m.lim.MaxDepth})
			return sh
		}
		if e := m.check(sh); e != nil {
			m.err = e
			return sh
		}
	}
	return sh
}

// count adds n selections of the response name key to sh; true when that
// is over MaxRepeats (m.err is set).
func (m *measurer) count(sh *shape, key string, n int) bool {
	c := satAdd(sh.names[key], n)
	sh.names[key] = c
	if c > MaxRepeats {
		m.err = refusal(CodeRepeatLimit,
			fmt.Sprintf("%q is selected %d times in one selection set; at most %d are allowed", key, c, MaxRepeats),
			map[string]any{"field": key, "limit": MaxRepeats})
		return true
	}
	return false
}

func satAdd(a, b int) int {
	if a > int(^uint(0)>>1)-b {
		return int(^uint(0) >> 1)
	}
	return a + b
}
