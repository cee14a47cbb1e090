package gqledge

import (
	"bytes"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"io"
	"mime"
	"net/http"
	"sync"

	"github.com/99designs/gqlgen/graphql"

	"github.com/incidentlib/incidentlib"
	"github.com/incidentlib/incidentlib/server/gqledge/respcache"
)

// What the response cache reads of a GraphQL request before gqlgen does:
// the document's hash, the operation, the variables and the cache key,
// memoized by the request's exact bytes.

// gqlRequest is what the cache reads of a GraphQL request before gqlgen.
type gqlRequest struct {
	docHash   string // hex SHA-256 of the document text, or the persisted hash sent (logged)
	keyHash   string // the document hash of the key: docHash, or with trusted documents the SHA-256 of the document an id names
	query     string // the document text when sent (its first bytes only, from the memo)
	persisted bool   // sent by persisted hash only, without the text
	op        string
	vars      []byte // compacted JSON, empty for none
}

type persistedQueryExt struct {
	Version    int    `json:"version"`
	Sha256Hash string `json:"sha256Hash"`
}

type postBody struct {
	Query         string          `json:"query"`
	OperationName string          `json:"operationName"`
	Variables     json.RawMessage `json:"variables"`
	Extensions    struct {
		PersistedQuery *persistedQueryExt `json:"persistedQuery"`
	} `json:"extensions"`
}

// readGraphQLRequest reads the document, operation and variables of a GET
// or a JSON POST, restoring the body for gqlgen. ok is false for anything
// the cache does not consider (other methods and media types, batches,
// malformed JSON, large bodies, a persisted-query extension gqlgen would
// refuse or that names another document than the text sent, an id that is
// not a trusted document); gqlgen then answers as it would.
func (o *Edge) readGraphQLRequest(r *http.Request) (req gqlRequest, ok bool) {
	var pb postBody
	switch r.Method {
	case http.MethodGet:
		if req, ok := o.getMemo.get(r.URL.RawQuery); ok {
			return req, true
		}
		defer func() {
			if ok {
				o.getMemo.put(r.URL.RawQuery, req.memoized())
			}
		}()
		wp, rerr := decodeQuery(r.URL.RawQuery)
		if rerr != nil {
			return req, false
		}
		if pb, ok = bodyOf(&wp.params, wp.rawVars); !ok {
			return req, false
		}
	case http.MethodPost:
		mt, _, err := mime.ParseMediaType(r.Header.Get("Content-Type"))
		if err != nil || mt != "application/json" || r.Body == nil {
			return req, false
		}
		body, err := readRequestBody(r)
		restoreBody(r, body, err)
		if err != nil || len(body) > maxCachedRequestBody {
			return req, false
		}
		if req, ok := o.postMemo.getBytes(body); ok {
			return req, true
		}
		defer func() {
			if ok {
				o.postMemo.put(string(body), req.memoized())
			}
		}()
		// The parameters as the guard and the POST transport decoded them.
		d, rerr := sharedParams(&o.params, body)
		if rerr != nil {
			return req, false // a batch (an array) or malformed: the guard answers
		}
		if pb, ok = bodyOf(&d.params, d.rawVars); !ok {
			return req, false
		}
	default:
		return req, false
	}
	return o.parseRequest(&pb)
}

// bodyOf is what the cache reads of decoded parameters: the persisted
// query extension as APQ reads it (a version that is not a whole number
// is no version), and the variables as sent.
func bodyOf(p *graphql.RawParams, rawVars json.RawMessage) (postBody, bool) {
	pb := postBody{Query: p.Query, OperationName: p.OperationName, Variables: rawVars}
	if v, ok := p.Extensions["persistedQuery"]; ok && v != nil {
		pq, ok := v.(map[string]any)
		if !ok {
			return pb, false // APQ refuses it; gqlgen answers
		}
		ext := &persistedQueryExt{}
		if n, ok := pq["version"].(json.Number); ok {
			if v, err := n.Int64(); err == nil {
				ext.Version = int(v)
			}
		}
		ext.Sha256Hash, _ = pq["sha256Hash"].(string)
		pb.Extensions.PersistedQuery = ext
	}
	return pb, true
}

// parseRequest makes the cache's reading of a decoded request.
func (o *Edge) parseRequest(pb *postBody) (req gqlRequest, ok bool) {
	req.query, req.op = pb.Query, pb.OperationName
	pq := pb.Extensions.PersistedQuery
	if pq != nil && (pq.Sha256Hash == "" || (o.trusted == nil && pq.Version != 1)) {
		return req, false // APQ refuses it (the trusted documents read the id only); gqlgen answers
	}
	switch {
	case pb.Query != "":
		sum := sha256.Sum256([]byte(pb.Query))
		req.docHash = hex.EncodeToString(sum[:])
		// Text and id together: APQ registers the text under the id only
		// if the id is its hash, the trusted documents accept it only if
		// the id names that text; anything else is refused there, and
		// must not be answered from an entry of the text.
		if pq != nil && !o.sameDocument(pq.Sha256Hash, pb.Query, req.docHash) {
			return req, false
		}
	case pq != nil:
		req.docHash = pq.Sha256Hash
		req.persisted = true
	default:
		return req, false
	}
	req.keyHash = req.docHash
	if o.trusted != nil {
		if req.keyHash, ok = o.trusted.canonicalHash(req); !ok {
			return req, false // an unknown id: PERSISTED_QUERY_NOT_FOUND
		}
	}
	if v := bytes.TrimSpace(pb.Variables); len(v) > 0 && !bytes.Equal(v, []byte("null")) {
		var buf bytes.Buffer
		if json.Compact(&buf, v) != nil {
			return req, false
		}
		req.vars = buf.Bytes()
	}
	return req, true
}

// memo remembers what recent request bodies (or GET query strings) say,
// so that the requests a page sends again and again are not decoded again:
// the raw bytes are the map key, so a hit is exactly the same request.
// Bounded in entries and in the size of what it keeps; emptied when full.
//
// The response cache keeps one per method (getMemo, postMemo: document
// hash, operation, variables) for requests that reached it, which is to
// say requests whose HTTP form the guard accepted (the guard is the only
// way to the cache; guard.go); the POST transport keeps the parameters it
// decodes (Edge.params).
type memo[V any] struct {
	mu sync.RWMutex
	m  map[string]V
}

const (
	memoEntries  = 2048
	memoMaxBytes = 4 << 10 // larger requests are decoded every time
)

func (m *memo[V]) get(raw string) (v V, ok bool) {
	if len(raw) > memoMaxBytes {
		return v, false
	}
	m.mu.RLock()
	v, ok = m.m[raw]
	m.mu.RUnlock()
	return v, ok
}

func (m *memo[V]) getBytes(raw []byte) (v V, ok bool) {
	if len(raw) > memoMaxBytes {
		return v, false
	}
	m.mu.RLock()
	v, ok = m.m[string(raw)] // no copy: the compiler converts in place for a lookup
	m.mu.RUnlock()
	return v, ok
}

func (m *memo[V]) put(raw string, v V) {
	if len(raw) > memoMaxBytes {
		return
	}
	m.mu.Lock()
	if m.m == nil || len(m.m) >= memoEntries {
		m.m = make(map[string]V, 64)
	}
	m.m[raw] = v
	m.mu.Unlock()
}

// memoized is req as a memo keeps it: the document's text only as far as
// debug logs show it (the hash says which document).
func (req gqlRequest) memoized() gqlRequest {
	req.query = truncate(req.query, logPrefixBytes)
	return req
}

// readRequestBody reads up to maxCachedRequestBody+1 bytes of the body,
// in one allocation when the length is known. On error it returns what it
// read.
func readRequestBody(r *http.Request) ([]byte, error) {
	if n := r.ContentLength; n >= 0 && n <= maxCachedRequestBody {
		body := make([]byte, n)
		k, err := io.ReadFull(r.Body, body)
		return body[:k], err
	}
	return io.ReadAll(io.LimitReader(r.Body, maxCachedRequestBody+1))
}

// restoreBody gives gqlgen the body the cache read: the same bytes, then
// the same error if reading failed (a body size limit, a broken client).
func restoreBody(r *http.Request, body []byte, err error) {
	rest := r.Body
	if err == nil && r.ContentLength == int64(len(body)) {
		r.Body = struct {
			io.Reader
			io.Closer
		}{bytes.NewReader(body), rest}
		return
	}
	var tail io.Reader = rest
	if err != nil {
		tail = errReader{err}
	}
	r.Body = struct {
		io.Reader
		io.Closer
	}{io.MultiReader(bytes.NewReader(body), tail), rest}
}

type errReader struct{ err error }

func (e errReader) Read([]byte) (int, error) { return 0, e.err }

// sameDocument says whether a persisted id sent with a document's text
// names that text: with trusted documents, the id's document is the text;
// otherwise (APQ), the id is the text's hash.
func (o *Edge) sameDocument(id, query, queryHash string) bool {
	if o.trusted != nil {
		doc, ok := o.trusted.byID[id]
		return ok && doc == query
	}
	return id == queryHash
}

// key computes the cache key of a request: the SHA-256 of its parts, each
// ended by a zero byte (none of them holds one: hex, JSON, header values).
func (req *gqlRequest) key(r *http.Request, lang incidentlib.Lang) respcache.Key {
	var arr [512]byte
	b := arr[:0]
	for _, part := range [...]string{req.keyHash, req.op, string(req.vars), string(lang),
		r.Header.Get("Accept"), r.Header.Get("Authorization"), r.Header.Get("Origin")} {
		b = append(b, part...)
		b = append(b, 0)
	}
	return sha256.Sum256(b)
}

// requestLang is the language a request resolves to, as withLang decides.
func requestLang(r *http.Request) incidentlib.Lang {
	if h := r.Header.Get("Accept-Language"); h != "" {
		return ParseAcceptLanguage(h)
	}
	return incidentlib.LangEn
}
