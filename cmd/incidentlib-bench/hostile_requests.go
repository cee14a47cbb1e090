package main

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"slices"
	"strings"
	"sync"
	"sync/atomic"

	"github.com/incidentlib/incidentlib/server/gqledge"
)

// The requests the hostile benchmark sends, and its attacking client.

// selectHostile returns the hostile requests whose names contain one of
// the comma-separated words of kinds; all when kinds is empty.
func selectHostile(kinds string) ([]hostileRequest, error) {
	reqs := hostileRequests()
	if kinds == "" {
		return reqs, nil
	}
	reqs = slices.DeleteFunc(reqs, func(h hostileRequest) bool {
		for _, k := range strings.Split(kinds, ",") {
			if k = strings.TrimSpace(k); k != "" && strings.Contains(h.name, k) {
				return false
			}
		}
		return true
	})
	if len(reqs) == 0 {
		return nil, fmt.Errorf("no hostile request matches -kinds %q", kinds)
	}
	return reqs, nil
}

// sendHostile sends one hostile request and returns the code it was
// refused with.
func sendHostile(ctx context.Context, client *http.Client, endpoint string, h hostileRequest) (string, error) {
	var req *http.Request
	var err error
	if h.method == http.MethodGet {
		req, err = http.NewRequestWithContext(ctx, http.MethodGet, endpoint+"?"+url.Values{"query": {h.query}}.Encode(), nil)
	} else {
		req, err = http.NewRequestWithContext(ctx, http.MethodPost, endpoint, bytes.NewReader(h.body))
		if err == nil {
			req.Header.Set("Content-Type", "application/json")
		}
	}
	if err != nil {
		return "", err
	}
	req.Header.Set("X-Bench-Kind", h.name)
	resp, err := client.Do(req)
	if err != nil {
		return "", err // the server may close the connection under a body it refused
	}
	defer resp.Body.Close()
	var out struct {
		Errors []struct {
			Extensions struct{ Code string }
		}
	}
	raw, _ := io.ReadAll(resp.Body)
	if err := json.Unmarshal(raw, &out); err != nil || len(out.Errors) == 0 {
		return "", fmt.Errorf("%s: status %d, not refused: %.200s", h.name, resp.StatusCode, raw)
	}
	return out.Errors[0].Extensions.Code, nil
}

// attack sends the hostile requests in turn, on conns connections, each
// as soon as the last answer is in, until ctx is done; it returns how many
// it sent.
func attack(ctx context.Context, client *http.Client, endpoint string, reqs []hostileRequest, conns int) int {
	var sent atomic.Int64
	var wg sync.WaitGroup
	for w := 0; w < conns; w++ {
		wg.Add(1)
		go func(w int) {
			defer wg.Done()
			for i := w; ctx.Err() == nil; i++ {
				_, _ = sendHostile(ctx, client, endpoint, reqs[i%len(reqs)])
				sent.Add(1)
			}
		}(w)
	}
	wg.Wait()
	return int(sent.Load())
}

// hostileRequest is one kind of request the server must refuse.
type hostileRequest struct {
	name   string
	method string
	query  string // GET: the query parameter
	body   []byte // POST
	code   string // the refusal expected
}

func hostileRequests() []hostileRequest {
	post := func(name, q, code string) hostileRequest {
		b, _ := json.Marshal(map[string]any{"query": q})
		return hostileRequest{name: name, method: http.MethodPost, body: b, code: code}
	}
	var aliases strings.Builder
	aliases.WriteString("{ ")
	for i := 0; i < 1000; i++ {
		fmt.Fprintf(&aliases, "a%d: incidents(first: 100) { nodes { id } } ", i)
	}
	aliases.WriteString("}")
	var aliases31 strings.Builder
	aliases31.WriteString("{ ")
	for i := 0; i < 31; i++ {
		fmt.Fprintf(&aliases31, "a%d: incidents(first: 100) { nodes { id title } } ", i)
	}
	aliases31.WriteString("}")
	chain := func(n int, sel string) string {
		var b strings.Builder
		b.WriteString(`{ incidents(first: 100) { nodes { ...F0 } } }`)
		for i := 0; i < n; i++ {
			fmt.Fprintf(&b, "\nfragment F%d on Incident { %s }", i, strings.ReplaceAll(sel, "NEXT", fmt.Sprintf("F%d", i+1)))
		}
		fmt.Fprintf(&b, "\nfragment F%d on Incident { id title }", n)
		return b.String()
	}
	batch := make([]map[string]any, 500)
	for i := range batch {
		batch[i] = map[string]any{"query": `{ incidents(first: 100) { nodes { id title } } }`}
	}
	batchBody, _ := json.Marshal(batch)
	big := bytes.Repeat([]byte(" "), 10<<20)
	copy(big, `{"query": "{ incidents { totalCount } }", "variables": {"x": "`)
	big[len(big)-2], big[len(big)-1] = '"', '}'
	return []hostileRequest{
		post("related 20 deep", `{ incidents(first: 100) { nodes { `+strings.Repeat("related { ", 20)+"id"+strings.Repeat(" }", 20)+" } } }", gqledge.CodeDepthLimit),
		post("1000 aliases of incidents(first: 100)", aliases.String(), gqledge.CodeTokenLimit),
		post("31 aliases of incidents(first: 100)", aliases31.String(), gqledge.CodeAliasLimit),
		post("10,000 repeated fields", "{ incidents { "+strings.Repeat("totalCount ", 10_000)+"} }", gqledge.CodeTokenLimit),
		post("1,500 repeated fields", "{ incidents { "+strings.Repeat("totalCount ", 1_500)+"} }", gqledge.CodeRepeatLimit),
		post("fragment chain doubling 40 times (aliases)", chain(40, "a: related { ...NEXT } b: related { ...NEXT }"), gqledge.CodeAliasLimit),
		post("fragment chain doubling 40 times", chain(40, "related { ...NEXT } recurrences { ...NEXT }"), gqledge.CodeDepthLimit),
		post("fragment fan-out 3^9 within the depth", chain(9, "related { ...NEXT } recurrences { ...NEXT } recurrenceOf { ...NEXT }"), gqledge.CodeCostLimit),
		post("fragment cycle", `{ incidents { nodes { ...A } } } fragment A on Incident { related { ...B } } fragment B on Incident { related { ...A } }`, "GRAPHQL_VALIDATION_FAILED"),
		post("cost 726,801", `{ incidents(first: 100) { nodes { related { related { related { id title } } } similar(first: 100) { incident { id } } } } }`, gqledge.CodeCostLimit),
		post("introspection in prod", `{ __schema { types { name fields { name } } } }`, gqledge.CodeIntrospectionOff),
		{name: "10 MB body", method: http.MethodPost, body: big, code: gqledge.CodeBodyTooLarge},
		{name: "batch of 500", method: http.MethodPost, body: batchBody, code: gqledge.CodeBatchLimit},
		{name: "mutation over GET", method: http.MethodGet, query: `mutation { deleteIncident(id: "IL-0001") { __typename } }`, code: gqledge.CodeMethodNotAllowed},
	}
}
