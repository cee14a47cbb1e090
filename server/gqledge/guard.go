package gqledge

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"mime"
	"net/http"
	"strings"
	"sync"
	"time"

	"github.com/99designs/gqlgen/graphql"
	"github.com/99designs/gqlgen/graphql/handler"
	"github.com/99designs/gqlgen/graphql/handler/lru"
	"github.com/vektah/gqlparser/v2/ast"
	"github.com/vektah/gqlparser/v2/gqlerror"

	"github.com/incidentlib/incidentlib"
	"github.com/incidentlib/incidentlib/server/metrics"
)

// guard is the server's defence against hostile and careless clients: the
// HTTP checks, the gqlgen extension with the document limits and the cost,
// the request deadline, the rate limiter, CORS and the published schema.
type guard struct {
	e       *Edge
	m       *metrics.Metrics
	lim     Limits
	es      graphql.ExecutableSchema
	cache   graphql.Cache[*ast.QueryDocument]
	rate    *rateLimiter
	proxy   string // trusted proxy header
	origins origins
	// authenticate identifies a request's sender (Options.Authenticate).
	authenticate func(*http.Request) (*http.Request, error)
	sdl          []byte
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
	// doc is the parsed document the guard checked, nil if it does not parse.
	doc *ast.QueryDocument
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

// newGuard configures gql with the limits of opts.
func newGuard(e *Edge, opts Options, gql *handler.Server, cache graphql.Cache[*ast.QueryDocument]) (*guard, error) {
	lim := opts.Limits
	if err := lim.withDefaults(); err != nil {
		return nil, err
	}
	g := &guard{e: e, m: e.m, lim: lim, cache: cache, proxy: opts.RateLimit.TrustedProxyHeader, refused: lru.New[*gqlerror.Error](refusedCacheSize),
		authenticate: opts.Authenticate}
	rate, err := newRateLimiter(opts.RateLimit, lim.MaxCost)
	if err != nil {
		return nil, err
	}
	g.rate = rate
	if g.origins, err = parseOrigins(opts.CORSOrigins); err != nil {
		return nil, err
	}
	// A backstop: the guard counts the tokens first.
	gql.SetParserTokenLimit(lim.MaxTokens + 1)
	// Validate hands the extension the executable schema.
	gql.Use(&limitsExtension{g})
	g.sdl = SchemaSDL(g.es.Schema())
	if opts.Prod {
		useProd(gql)
	}
	for _, x := range opts.Extensions {
		gql.Use(x)
	}
	return g, nil
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
//     refuses (request.go, parseRequest), and a batch. (An APQ hash alone
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
		if g.authenticate != nil {
			// A token that is not valid is refused whatever the request
			// asks for, before it is counted or read: never silently
			// anonymous.
			ar, err := g.authenticate(r)
			if err != nil {
				w.Header().Set("WWW-Authenticate", WWWAuthenticate)
				refuse(w, ct, http.StatusUnauthorized, incidentlib.EUNAUTHENTICATED, incidentlib.ErrorMessage(err), nil)
				return
			}
			r = ar
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
			// The one decoder (params.go) answers what the client got wrong.
			if _, rerr := decodeQuery(r.URL.RawQuery); rerr != nil {
				refuseRequest(w, ct, rerr)
				return
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
			// What encoding/json lets through (bad UTF-8) or reports late
			// (deep nesting), for a batch as for one request.
			if rerr := checkJSONText(body, "the request body"); rerr != nil {
				refuseRequest(w, ct, rerr)
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

// hitServer is the response cache as the guard sees it (caching.go):
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
		// As the POST transport decodes it, once for both (decodeParams);
		// a body it cannot decode is the client's mistake, answered here.
		d, rerr := sharedParams(&g.e.params, body)
		if rerr != nil {
			refuseRequest(w, r.Header.Get("Accept"), rerr)
			return
		}
		params := &d.params
		p.Query, p.OperationName, decoded = params.Query, params.OperationName, true
		p.Variables = func() string {
			b, _ := json.Marshal(params.Variables)
			return string(b)
		}
		r.Body = io.NopCloser(bytes.NewReader(body))
		r.ContentLength = int64(len(body))
	} else {
		q := r.URL.Query()
		p.Query, p.OperationName, decoded = q.Get("query"), q.Get("operationName"), true
		p.Variables = func() string { return q.Get("variables") }
	}
	if decoded && p.Query != "" {
		doc, e := g.checkDocument(ctx, p.Query, p.OperationName, requestFrom(ctx), rp)
		if e != nil {
			if st := stateOf(ctx); st != nil && st.debug { // the request log, as the response cache sets it
				st.queryPrefix = truncate(p.Query, logPrefixBytes)
				st.varsPrefix = truncate(p.Variables(), logPrefixBytes)
			}
			g.refuseEarly(w, r, rp, p.OperationName, e)
			return
		}
		rp.checked, rp.query, rp.doc = true, p.Query, doc
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
	if g.m != nil {
		g.m.CountError(opName, code)
	}
	if st := stateOf(r.Context()); st != nil {
		st.op, st.cost = opName, rp.cost
	}
	out, _ := json.Marshal(requestErrors{Errors: gqlerror.List{e}, Extensions: map[string]any{"cost": rp.cost}})
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
