package gqledge

import (
	"bytes"
	"encoding/json"
	"mime"
	"net/http"
	"strconv"
	"strings"

	"github.com/vektah/gqlparser/v2/gqlerror"
)

// Refusals before GraphQL runs: the response's media type, and the
// GraphQL-over-HTTP error body with its code.

const (
	mediaGraphQLResponse = "application/graphql-response+json"
	mediaJSON            = "application/json"
)

// negotiate picks the response's media type from the Accept header, as
// the GraphQL-over-HTTP specification has it: application/json without an
// Accept header and for a wildcard (*/*, application/*), which legacy
// clients send and may not understand the newer type for;
// application/graphql-response+json when the client names it and does not
// prefer application/json; "" when it accepts neither.
func negotiate(accept []string) string {
	if len(accept) == 0 {
		return mediaJSON
	}
	if len(accept) == 1 { // the common headers, without parsing them
		switch accept[0] {
		case mediaGraphQLResponse, mediaGraphQLResponse + ", " + mediaJSON:
			return mediaGraphQLResponse
		case mediaJSON, "*/*", "":
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
			case mediaGraphQLResponse:
				cand = mediaGraphQLResponse
			case mediaJSON, "*/*", "application/*":
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
		return mediaJSON
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

// refuseRequest answers a malformed request (params.go): 400 BAD_REQUEST,
// with the offset where JSON parsing stopped.
func refuseRequest(w http.ResponseWriter, contentType string, e *RequestError) {
	refuse(w, contentType, http.StatusBadRequest, CodeBadRequest, e.Error(), e.extensions())
}

func writeRefusalBody(b *bytes.Buffer, code, msg string, ext map[string]any) {
	e := map[string]any{"code": code}
	for k, v := range ext {
		e[k] = v
	}
	resp := requestErrors{
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
