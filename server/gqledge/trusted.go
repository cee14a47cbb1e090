package gqledge

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"maps"
	"os"
	"sort"

	"github.com/99designs/gqlgen/graphql"
	"github.com/99designs/gqlgen/graphql/errcode"
	"github.com/go-viper/mapstructure/v2"
	"github.com/prometheus/client_golang/prometheus"
	"github.com/vektah/gqlparser/v2/ast"
	"github.com/vektah/gqlparser/v2/gqlerror"
	"github.com/vektah/gqlparser/v2/parser"
	"github.com/vektah/gqlparser/v2/validator"
)

// Trusted documents (--trusted-documents FILE): the server accepts only
// the operations listed in a persisted-query manifest, as client tooling
// produces it. Two shapes are read:
//
//   - a JSON object mapping an id to a document, {"<id>": "<document>", ...}
//     (Relay's persisted queries, and the "map" output of Apollo's and
//     GraphQL Code Generator's tooling);
//   - Apollo's manifest, {"format": "apollo-persisted-query-manifest",
//     "version": 1, "operations": [{"id", "name", "type", "body"}, ...]}.
//
// A client sends an operation by id in the APQ extension,
// extensions.persistedQuery = {"version": 1, "sha256Hash": "<id>"}, by POST
// or by GET; or sends the full text of a listed document. Ids are usually
// the SHA-256 of the document; where an id has that shape it must be. Every
// document must parse and validate against the schema at start-up.
//
// Refusals (documented codes):
//
//   - PERSISTED_QUERY_NOT_FOUND: the id is not in the manifest (HTTP 200, as
//     for APQ, so APQ clients retry with the text, which is then refused as
//     below unless it is listed).
//   - FORBIDDEN: the text sent is not a listed document, or does not match
//     the document of the id sent with it (HTTP 400 with
//     application/graphql-response+json, 422 with application/json: a
//     request error, nothing ran).
//
// With trusted documents the APQ cache is off: registering new documents is
// exactly what the list forbids.

// Codes of trusted-document refusals.
const (
	CodePersistedQueryNotFound = "PERSISTED_QUERY_NOT_FOUND"
	CodeForbidden              = "FORBIDDEN"
)

func init() {
	errcode.RegisterErrorType(CodeForbidden, errcode.KindProtocol)
}

// TrustedDocuments is a loaded manifest.
type TrustedDocuments struct {
	byID   map[string]string // id → document
	hashOf map[string]string // id → hex SHA-256 of its document
	byHash map[string]bool   // hex SHA-256 of every listed document
}

// Len is the number of ids in the manifest.
func (t *TrustedDocuments) Len() int { return len(t.byID) }

// LoadTrustedDocuments reads a manifest file.
func LoadTrustedDocuments(path string) (*TrustedDocuments, error) {
	data, err := os.ReadFile(path)
	if err != nil {
		return nil, err
	}
	t, err := ParseTrustedDocuments(data)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", path, err)
	}
	return t, nil
}

type apolloManifest struct {
	Format     string `json:"format"`
	Version    int    `json:"version"`
	Operations []struct {
		ID   string `json:"id"`
		Name string `json:"name"`
		Type string `json:"type"`
		Body string `json:"body"`
	} `json:"operations"`
}

// ParseTrustedDocuments reads a manifest in either shape. Documents are
// checked against the schema by the server that uses them.
func ParseTrustedDocuments(data []byte) (*TrustedDocuments, error) {
	docs := map[string]string{}
	var probe map[string]json.RawMessage
	if err := json.Unmarshal(data, &probe); err != nil {
		return nil, fmt.Errorf("the trusted documents are not a JSON object: %v", err)
	}
	if _, ok := probe["operations"]; ok {
		var m apolloManifest
		if err := json.Unmarshal(data, &m); err != nil {
			return nil, fmt.Errorf("the Apollo manifest is malformed: %v", err)
		}
		if m.Format != "apollo-persisted-query-manifest" || m.Version != 1 {
			return nil, fmt.Errorf("an operations manifest must have format apollo-persisted-query-manifest and version 1, got %q version %d", m.Format, m.Version)
		}
		for i, op := range m.Operations {
			if op.ID == "" || op.Body == "" {
				return nil, fmt.Errorf("operation %d has no id or no body", i)
			}
			if prev, dup := docs[op.ID]; dup && prev != op.Body {
				return nil, fmt.Errorf("id %s is listed twice with different documents", op.ID)
			}
			docs[op.ID] = op.Body
		}
	} else {
		dec := json.NewDecoder(bytes.NewReader(data))
		var raw map[string]any
		if err := dec.Decode(&raw); err != nil {
			return nil, err
		}
		for id, v := range raw {
			s, ok := v.(string)
			if !ok || s == "" {
				return nil, fmt.Errorf("id %s: the document must be a non-empty string", id)
			}
			docs[id] = s
		}
	}
	if len(docs) == 0 {
		return nil, fmt.Errorf("the trusted documents list no operation")
	}
	t := &TrustedDocuments{byID: docs, hashOf: map[string]string{}, byHash: map[string]bool{}}
	for id, doc := range docs {
		h := sha256Hex(doc)
		if isSHA256Hex(id) && id != h {
			return nil, fmt.Errorf("id %s has the shape of a SHA-256 but its document hashes to %s", id, h)
		}
		t.hashOf[id] = h
		t.byHash[h] = true
	}
	return t, nil
}

// With is t with docs listed as well, each under its SHA-256 as its id:
// the documents a part of the server sends through the edge itself (the
// MCP tools, server.Config.NoMCP), which a manifest need not list. A
// client may send them by text or by that id, like any listed document.
// They are checked against the schema at start-up with the manifest's;
// t is not changed.
func (t *TrustedDocuments) With(docs []string) *TrustedDocuments {
	w := &TrustedDocuments{byID: maps.Clone(t.byID), hashOf: maps.Clone(t.hashOf), byHash: maps.Clone(t.byHash)}
	for _, doc := range docs {
		h := sha256Hex(doc)
		w.byID[h], w.hashOf[h], w.byHash[h] = doc, h, true
	}
	return w
}

// check parses and validates every document against the schema.
func (t *TrustedDocuments) check(schema *ast.Schema) error {
	ids := make([]string, 0, len(t.byID))
	for id := range t.byID {
		ids = append(ids, id)
	}
	sort.Strings(ids)
	for _, id := range ids {
		doc, err := parser.ParseQuery(&ast.Source{Name: id, Input: t.byID[id]})
		if err != nil {
			return fmt.Errorf("trusted document %s does not parse: %v", id, err)
		}
		if errs := validator.ValidateWithRules(schema, doc, nil); len(errs) > 0 {
			return fmt.Errorf("trusted document %s does not validate: %v", id, errs[0])
		}
	}
	return nil
}

// canonicalHash is the document hash a request is cached under: the
// SHA-256 of the listed document an id names, so that the same document
// sent by id or by text shares its cache entries. ok is false for an id
// that is not listed: the request is refused (PERSISTED_QUERY_NOT_FOUND)
// and must not be answered from the cache, even by an entry of a text
// whose hash is that id.
func (t *TrustedDocuments) canonicalHash(req gqlRequest) (hash string, ok bool) {
	if req.persisted {
		h, ok := t.hashOf[req.docHash]
		return h, ok
	}
	return req.docHash, true
}

// trustedExtension is the gqlgen extension that enforces the list.
type trustedExtension struct {
	docs     *TrustedDocuments
	rejected *prometheus.CounterVec
}

var _ interface {
	graphql.OperationParameterMutator
	graphql.HandlerExtension
} = trustedExtension{}

func (trustedExtension) ExtensionName() string                   { return "TrustedDocuments" }
func (trustedExtension) Validate(graphql.ExecutableSchema) error { return nil }

func (t trustedExtension) MutateOperationParameters(_ context.Context, raw *graphql.RawParams) *gqlerror.Error {
	var id string
	if pq := raw.Extensions["persistedQuery"]; pq != nil {
		var ext struct {
			Sha256 string `mapstructure:"sha256Hash"`
		}
		if err := mapstructure.Decode(pq, &ext); err != nil {
			return t.refuse(CodeForbidden, "invalid persistedQuery extension")
		}
		id = ext.Sha256
	}
	if id != "" {
		doc, ok := t.docs.byID[id]
		if !ok {
			return t.refuse(CodePersistedQueryNotFound, "PersistedQueryNotFound")
		}
		if raw.Query != "" && raw.Query != doc {
			return t.refuse(CodeForbidden, "the document sent is not the trusted document of its id")
		}
		raw.Query = doc
		return nil
	}
	if raw.Query == "" {
		return nil // gqlgen answers that there is no document
	}
	if !t.docs.byHash[sha256Hex(raw.Query)] {
		return t.refuse(CodeForbidden, "only trusted documents are accepted: send a listed operation by its id")
	}
	return nil
}

func (t trustedExtension) refuse(code, msg string) *gqlerror.Error {
	t.rejected.WithLabelValues(code).Inc()
	err := gqlerror.Errorf("%s", msg)
	errcode.Set(err, code)
	return err
}

func sha256Hex(s string) string {
	sum := sha256.Sum256([]byte(s))
	return hex.EncodeToString(sum[:])
}

func isSHA256Hex(s string) bool {
	if len(s) != 64 {
		return false
	}
	_, err := hex.DecodeString(s)
	return err == nil
}
