package gqledge_test

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"net/url"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/99designs/gqlgen/graphql"

	"github.com/incidentlib/incidentlib"
	"github.com/incidentlib/incidentlib/internal/testutil"
	"github.com/incidentlib/incidentlib/server"
	"github.com/incidentlib/incidentlib/server/gqledge"
)

// fragmentChain is a document whose fragments double at each of n steps:
// F0 spreads F1 twice, in fields sel(a) and sel(b), F1 spreads F2 twice,
// and so on. Expanded it has 2^n copies of the last fragment.
func fragmentChain(n int, sel func(i int, branch string) string) string {
	var b strings.Builder
	b.WriteString(`{ incident(id: "IL-0213") { ...F0 } }`)
	for i := 0; i < n; i++ {
		fmt.Fprintf(&b, "\nfragment F%d on Incident { %s %s }", i, sel(i+1, "a"), sel(i+1, "b"))
	}
	fmt.Fprintf(&b, "\nfragment F%d on Incident { id }", n)
	return b.String()
}

func repeat(s string, n int) string { return strings.Repeat(s, n) }

// TestHostileRequestsRefused sends each hostile request and requires its
// code and status, before any resolver runs or the store is read.
func TestHostileRequestsRefused(t *testing.T) {
	seeds := seedIncidents(t)
	def := testutil.NewCountingServer(t, seeds, server.Config{})
	// Limits raised out of the way, to reach the checks behind them.
	bigDocs := testutil.NewCountingServer(t, seeds, server.Config{Limits: gqledge.Limits{MaxTokens: 200_000}})
	loose := testutil.NewCountingServer(t, seeds, server.Config{Limits: gqledge.Limits{MaxTokens: 200_000, MaxDepth: 10_000, MaxAliases: 1 << 30}})

	thousandAliases := func() string {
		var b strings.Builder
		b.WriteString("{ ")
		for i := 0; i < 1000; i++ {
			fmt.Fprintf(&b, "a%d: incidents(first: 100) { nodes { id } } ", i)
		}
		return b.String() + "}"
	}()
	aliases31 := "{ " + func() string {
		var b strings.Builder
		for i := 0; i < 31; i++ {
			fmt.Fprintf(&b, "a%d: incident(id: \"IL-0213\") { id } ", i)
		}
		return b.String()
	}() + "}"
	deep := `{ incident(id: "IL-0213") { ` + repeat("related { ", 20) + "id" + repeat(" }", 20) + " } }"
	// A connection of connections: each level is a page of 100.
	expensive := `{ incidents(first: 100) { nodes { related { related { related { id title } } } similar(first: 100) { incident { id } } } } }`
	// Three different relations at each of 11 levels: 3^11 fields expanded,
	// from a document of 12 fragments.
	fanOut := func() string {
		var b strings.Builder
		b.WriteString(`{ incident(id: "IL-0213") { ...F0 } }`)
		for i := 0; i < 10; i++ {
			fmt.Fprintf(&b, "\nfragment F%d on Incident { related { ...F%d } recurrences { ...F%[2]d } recurrenceOf { ...F%[2]d } }", i, i+1)
		}
		b.WriteString("\nfragment F10 on Incident { id title date }")
		return b.String()
	}()
	aliasedChain := fragmentChain(40, func(i int, br string) string { return fmt.Sprintf("%s: related { ...F%d }", br, i) })
	unaliasedChain := fragmentChain(40, func(i int, br string) string { return fmt.Sprintf("related { ...F%d }", i) })
	flatDoubling := func() string {
		var b strings.Builder
		b.WriteString(`{ incident(id: "IL-0213") { ...F0 } }`)
		for i := 0; i < 40; i++ {
			fmt.Fprintf(&b, "\nfragment F%d on Incident { ...F%d ...G%[2]d }\nfragment G%[2]d on Incident { ...F%[2]d }", i, i+1)
		}
		b.WriteString("\nfragment F40 on Incident { id }")
		return b.String()
	}()

	batch := func(n int) []byte {
		ops := make([]map[string]any, n)
		for i := range ops {
			ops[i] = map[string]any{"query": `{ incident(id: "IL-0213") { id } }`}
		}
		b, _ := json.Marshal(ops)
		return b
	}
	big := bytes.Repeat([]byte(" "), 10<<20)
	copy(big, `{"query": "{ incident(id: \"IL-0213\") { id } }", "variables": {"x": "`)
	big[len(big)-2], big[len(big)-1] = '"', '}'

	post := func(hs *testutil.CountingServer, q string) func(t *testing.T) *testutil.Reply {
		return func(t *testing.T) *testutil.Reply { return hs.Post(t, q, nil) }
	}
	cases := []struct {
		name   string
		send   func(t *testing.T) *testutil.Reply
		status int
		code   string
	}{
		{"DeepRelated", post(def, deep), 400, gqledge.CodeDepthLimit},
		{"ThousandAliases", post(bigDocs, thousandAliases), 400, gqledge.CodeAliasLimit},
		{"ThousandAliasesTokenLimit", post(def, thousandAliases), 400, gqledge.CodeTokenLimit},
		{"AliasesOverLimit", post(def, aliases31), 400, gqledge.CodeAliasLimit},
		{"TenThousandRepeatedFields", post(def, "{ incidents { "+repeat("totalCount ", 10_000)+"} }"), 400, gqledge.CodeTokenLimit},
		{"RepeatedFieldsUnderTokenLimit", post(def, "{ incidents { "+repeat("totalCount ", 1_000)+"} }"), 400, gqledge.CodeRepeatLimit},
		{"RepeatedFieldsThroughFragments", post(def, `{ incidents { nodes { ...A ...B } } } fragment A on Incident { `+repeat("id ", 500)+`} fragment B on Incident { `+repeat("id ", 500)+`}`), 400, gqledge.CodeRepeatLimit},
		{"CostOverLimit", post(def, expensive), 400, gqledge.CodeCostLimit},
		{"FragmentFanOut", post(def, fanOut), 400, gqledge.CodeCostLimit},
		{"FragmentChainDoublingAliased", post(def, aliasedChain), 400, gqledge.CodeAliasLimit},
		{"FragmentChainDoublingUnaliased", post(def, unaliasedChain), 400, gqledge.CodeDepthLimit},
		{"FragmentChainDoublingLimitsRaised", post(loose, aliasedChain), 400, gqledge.CodeCostLimit},
		{"FragmentChainDoublingFlat", post(loose, flatDoubling), 400, gqledge.CodeRepeatLimit},
		{"FragmentCycle", post(def, `{ incident(id: "IL-0213") { ...A } } fragment A on Incident { related { ...B } } fragment B on Incident { related { ...A } }`), 400, "GRAPHQL_VALIDATION_FAILED"},
		{"FragmentCycleLimitsRaised", post(loose, `{ incident(id: "IL-0213") { ...A } } fragment A on Incident { ...B id } fragment B on Incident { ...A id }`), 400, "GRAPHQL_VALIDATION_FAILED"},
		{"BodyTooLarge", func(t *testing.T) *testutil.Reply { return def.PostBody(t, big) }, 413, gqledge.CodeBodyTooLarge},
		{"BodyTooLargeChunked", func(t *testing.T) *testutil.Reply {
			req, _ := http.NewRequest(http.MethodPost, def.URL+"/graphql", io.MultiReader(bytes.NewReader(big)))
			req.Header.Set("Content-Type", "application/json")
			req.ContentLength = -1
			return def.Do(t, req)
		}, 413, gqledge.CodeBodyTooLarge},
		{"BatchOf500", func(t *testing.T) *testutil.Reply { return def.PostBody(t, batch(500)) }, 400, gqledge.CodeBatchLimit},
		{"MutationOverGET", func(t *testing.T) *testutil.Reply {
			return def.Get(t, `mutation { reviewIncident(id: "IL-0213", decision: APPROVE) { incident { id } } }`)
		}, 405, gqledge.CodeMethodNotAllowed},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			before := [3]testutil.Work{def.Work(), bigDocs.Work(), loose.Work()}
			r := c.send(t)
			if r.Status != c.status || r.Code() != c.code {
				t.Fatalf("status %d code %q, want %d %s: %.300s", r.Status, r.Code(), c.status, c.code, r.Raw)
			}
			if after := [3]testutil.Work{def.Work(), bigDocs.Work(), loose.Work()}; after != before {
				t.Fatalf("work done before the refusal: %+v, then %+v", before, after)
			}
			if r.Cost() < 0 {
				t.Errorf("no extensions.cost: %.300s", r.Raw)
			}
		})
	}
	t.Run("CostOverLimitReportsCostAndLimit", func(t *testing.T) {
		r := def.Post(t, expensive, nil)
		cost, _ := r.Ext("cost").(float64)
		limit, _ := r.Ext("limit").(float64)
		if int(limit) != gqledge.DefaultMaxCost || int(cost) <= int(limit) || r.Cost() != int(cost) {
			t.Fatalf("cost %v limit %v extensions.Cost %d", r.Ext("cost"), r.Ext("limit"), r.Cost())
		}
	})
	t.Run("RefusedAgainWithoutParsing", func(t *testing.T) {
		// The second time, the refusal comes from the guard's memory of
		// refused documents: the same code and extensions.
		q := `{ incident(id: "IL-0213") { ` + repeat("related { ", 15) + "id" + repeat(" }", 15) + " } }"
		a, b := def.Post(t, q, nil), def.Post(t, q, nil)
		if a.Code() != gqledge.CodeDepthLimit || b.Code() != gqledge.CodeDepthLimit || string(a.Raw) != string(b.Raw) {
			t.Fatalf("%s\n%s", a.Raw, b.Raw)
		}
	})
	t.Run("MutationOverGETAllowsPOST", func(t *testing.T) {
		r := def.Get(t, `mutation { reviewIncident(id: "IL-0213", decision: APPROVE) { incident { id } } }`)
		if r.Header.Get("Allow") != "POST" {
			t.Fatalf("Allow %q", r.Header.Get("Allow"))
		}
	})
}

// TestDefaultLimitsAdmitTheREADMEQueries runs the README's queries and the
// list page of the N+1 proof at first: 100 under the default limits.
func TestDefaultLimitsAdmitTheREADMEQueries(t *testing.T) {
	incs := seedIncidents(t)
	hs := testutil.NewCountingServer(t, incs, server.Config{Prod: true})
	queries := map[string]string{
		"IncidentTitle": `{ incident(id: "IL-0213") { title(lang: KO) organization { name } symptoms { label } } }`,
		"ListPage": `query ListPage {
  incidents(first: 20, filter: { symptoms: ["high-latency"], dateFrom: "2020-01-01" },
            orderBy: { field: DATE, direction: DESC }) {
    totalCount
    pageInfo { hasNextPage endCursor }
    nodes {
      id date title
      organization { name incidentCount }
      symptoms { label }
      related { id title related { id } }
      recurrenceOf { id title }
      recurrences { id }
    }
    facets(kinds: [SYMPTOM, ROOT_CAUSE]) { kind counts { term { slug label } count } }
    years { year count }
  }
}`,
		"IncidentPage": `{
  incident(id: "IL-0216") {
    title(lang: KO) summary(lang: KO) lessons(lang: KO)
    timeline { detectedAfter resolvedAfter resolvedAfterSeconds }
    remediation { text(lang: KO) }
    sources { url archived }
    similar(first: 5) { score sameOrganization sharedTerms { label } incident { id title } }
  }
}`,
		"Taxonomy": `{
  taxonomy(kind: ROOT_CAUSE) { slug label(lang: KO) description incidentCount }
  term(kind: SYMPTOM, slug: "high-latency") { incidents(first: 5) { nodes { id title } } }
  organizations(first: 10) { totalCount nodes { slug name incidentCount } }
  nodes(ids: ["IL-0213", "org:roblox", "term:symptom:high-latency"]) { id }
}`,
		"NPlusOneProofAt100": strings.Replace(testutil.ListPageQuery, "$n: Int", "$n: Int = 100", 1),
	}
	for name, q := range queries {
		t.Run(name, func(t *testing.T) {
			r := hs.Post(t, q, nil)
			if r.Status != 200 || len(r.Errors) > 0 {
				t.Fatalf("status %d: %+v", r.Status, r.Errors)
			}
			if c := r.Cost(); c <= 0 || c > gqledge.DefaultMaxCost {
				t.Fatalf("cost %d", c)
			}
			t.Logf("cost %d", r.Cost())
		})
	}
}

func TestRequestTimeout(t *testing.T) {
	incs := seedIncidents(t)
	t.Run("PartialData", func(t *testing.T) {
		// The incident field waits for the request's deadline before it
		// resolves; taxonomy needs no store and is answered.
		waiter := server.Config{Limits: gqledge.Limits{RequestTimeout: 50 * time.Millisecond}}
		waiter.Extensions = []graphql.HandlerExtension{fieldFunc(func(ctx context.Context, next graphql.Resolver) (any, error) {
			if fc := graphql.GetFieldContext(ctx); fc != nil && fc.Field.Name == "incident" {
				<-ctx.Done()
			}
			return next(ctx)
		})}
		hs := testutil.NewCountingServer(t, incs, waiter)
		r := hs.Post(t, `{ taxonomy(kind: SEVERITY) { slug } incident(id: "IL-0213") { id title } }`, nil)
		var data struct {
			Taxonomy []struct{ Slug string }
			Incident *struct{ ID string }
		}
		if err := json.Unmarshal(r.Data, &data); err != nil {
			t.Fatalf("%s: %v", r.Raw, err)
		}
		if r.Status != 200 || r.Code() != incidentlib.ETIMEOUT || len(data.Taxonomy) == 0 || data.Incident != nil {
			t.Fatalf("status %d: %s", r.Status, r.Raw)
		}
	})
	t.Run("DeadlineBeforeExecution", func(t *testing.T) {
		hs := testutil.NewCountingServer(t, incs, server.Config{Limits: gqledge.Limits{RequestTimeout: time.Nanosecond}})
		before := hs.Work()
		r := hs.Post(t, `{ incident(id: "IL-0213") { id } }`, nil)
		if r.Code() != incidentlib.ETIMEOUT || r.Cost() < 0 {
			t.Fatalf("status %d: %s", r.Status, r.Raw)
		}
		if hs.Work() != before {
			t.Fatalf("work done after the deadline")
		}
	})
}

type fieldFunc func(ctx context.Context, next graphql.Resolver) (any, error)

func (fieldFunc) ExtensionName() string                   { return "TestFieldFunc" }
func (fieldFunc) Validate(graphql.ExecutableSchema) error { return nil }
func (f fieldFunc) InterceptField(ctx context.Context, next graphql.Resolver) (any, error) {
	return f(ctx, next)
}

func TestRateLimit(t *testing.T) {
	incs := seedIncidents(t)
	// The rate refills a thousandth of a cost per second: nothing comes
	// back while the test runs. A response served from the response cache
	// costs nothing (it runs no resolver): the cache is off here.
	hs := testutil.NewCountingServer(t, incs, server.Config{
		ResponseCacheBytes: -1,
		Limits:             gqledge.Limits{MaxCost: 1000},
		RateLimit:          gqledge.RateLimit{CostPerSecond: 0.001, Burst: 1000, TrustedProxyHeader: "X-Forwarded-For"},
	})
	const big = `{ incidents(first: 60) { nodes { id title date org orgSlug dateKind url updatedAt } } }` // 1 + 60 × 9
	const small = `{ incident(id: "IL-0213") { id } }`
	// A client is a verified token's name (or its address): two API tokens.
	alice, bob := testutil.APIToken(t, hs.DB, "alice", incidentlib.RoleEditor), testutil.APIToken(t, hs.DB, "bob", incidentlib.RoleEditor)
	first := hs.Post(t, big, nil, "Authorization", "Bearer "+alice)
	if first.Status != 200 || len(first.Errors) > 0 || first.Cost() < 501 || first.Cost() > 1000 {
		t.Fatalf("the first request (cost %d) must pass and cost over half the burst: %s", first.Cost(), first.Raw)
	}
	t.Run("RefusedWithRetryAfter", func(t *testing.T) {
		before := hs.Work()
		r := hs.Post(t, big, nil, "Authorization", "Bearer "+alice)
		if r.Status != http.StatusTooManyRequests || r.Code() != gqledge.CodeRateLimited {
			t.Fatalf("status %d: %s", r.Status, r.Raw)
		}
		if s, err := strconv.Atoi(r.Header.Get("Retry-After")); err != nil || s < 1 {
			t.Fatalf("Retry-After %q", r.Header.Get("Retry-After"))
		}
		if hs.Work() != before {
			t.Fatal("a refused request ran")
		}
	})
	t.Run("RefusedNotCharged", func(t *testing.T) {
		// What the refused request would have cost is still there.
		if r := hs.Post(t, small, nil, "Authorization", "Bearer "+alice); r.Status != 200 || len(r.Errors) > 0 {
			t.Fatalf("status %d: %s", r.Status, r.Raw)
		}
	})
	t.Run("KeyedByToken", func(t *testing.T) {
		if r := hs.Post(t, big, nil, "Authorization", "Bearer "+bob); r.Status != 200 {
			t.Fatalf("another token has its own bucket: %d %s", r.Status, r.Raw)
		}
	})
	t.Run("KeyedByTrustedProxyHeader", func(t *testing.T) {
		for _, ip := range []string{"203.0.113.7", "203.0.113.8"} {
			if r := hs.Post(t, big, nil, "X-Forwarded-For", "198.51.100.1, "+ip); r.Status != 200 {
				t.Fatalf("client %s: %d %s", ip, r.Status, r.Raw)
			}
		}
		if r := hs.Post(t, big, nil, "X-Forwarded-For", "192.0.2.1, 203.0.113.7"); r.Status != http.StatusTooManyRequests {
			t.Fatalf("the proxy's entry decides, not the client's: %d %s", r.Status, r.Raw)
		}
	})
	t.Run("EmptyBucketRefusedBeforeTheBody", func(t *testing.T) {
		tiny := testutil.NewCountingServer(t, incs, server.Config{
			ResponseCacheBytes: -1,
			Limits:             gqledge.Limits{MaxCost: 3},
			RateLimit:          gqledge.RateLimit{CostPerSecond: 0.001},
		})
		for i := 0; i < 3; i++ { // { __typename } costs 1
			if r := tiny.Post(t, `{ __typename }`, nil); r.Status != 200 || r.Cost() != 1 {
				t.Fatalf("request %d: %d %s", i, r.Status, r.Raw)
			}
		}
		// Not even JSON: refused for the rate before the body is read.
		r := tiny.PostBody(t, []byte("not json"))
		if r.Status != http.StatusTooManyRequests || r.Code() != gqledge.CodeRateLimited || r.Header.Get("Retry-After") == "" {
			t.Fatalf("status %d: %s", r.Status, r.Raw)
		}
	})
	t.Run("ProxyHeaderIgnoredUnlessTrusted", func(t *testing.T) {
		plain := testutil.NewCountingServer(t, incs, server.Config{
			ResponseCacheBytes: -1,
			Limits:             gqledge.Limits{MaxCost: 1000},
			RateLimit:          gqledge.RateLimit{CostPerSecond: 0.001},
		})
		if r := plain.Post(t, big, nil, "X-Forwarded-For", "203.0.113.1"); r.Status != 200 {
			t.Fatalf("%d %s", r.Status, r.Raw)
		}
		if r := plain.Post(t, big, nil, "X-Forwarded-For", "203.0.113.2"); r.Status != http.StatusTooManyRequests {
			t.Fatalf("a header nobody trusts must not make a new client: %d %s", r.Status, r.Raw)
		}
	})
}

func TestBatch(t *testing.T) {
	incs := seedIncidents(t)
	hs := testutil.NewCountingServer(t, incs, server.Config{ResponseCacheBytes: -1, Limits: gqledge.Limits{MaxCost: 100}})
	ops := func(qs ...string) []byte {
		var list []map[string]any
		for _, q := range qs {
			list = append(list, map[string]any{"query": q})
		}
		b, _ := json.Marshal(list)
		return b
	}
	t.Run("AnswersAnArray", func(t *testing.T) {
		r := hs.PostBody(t, ops(`{ incident(id: "IL-0213") { id } }`, `{ incident(id: "IL-0216") { id } }`))
		var out []struct {
			Data       struct{ Incident struct{ ID string } }
			Extensions struct{ Cost int }
		}
		if err := json.Unmarshal(r.Raw, &out); err != nil || r.Status != 200 {
			t.Fatalf("%d %s", r.Status, r.Raw)
		}
		if len(out) != 2 || out[0].Data.Incident.ID != "IL-0213" || out[1].Data.Incident.ID != "IL-0216" || out[0].Extensions.Cost == 0 {
			t.Fatalf("%s", r.Raw)
		}
	})
	t.Run("SharesTheCostLimit", func(t *testing.T) {
		q := `{ incidents(first: 30) { nodes { id } } }` // 1 + 30 × 2 = 61: one fits, two do not
		r := hs.PostBody(t, ops(q, q))
		var out []testutil.GQLResult
		if err := json.Unmarshal(r.Raw, &out); err != nil || len(out) != 2 {
			t.Fatalf("%d %s", r.Status, r.Raw)
		}
		if len(out[0].Errors) > 0 || out[1].Code() != gqledge.CodeCostLimit {
			t.Fatalf("%s", r.Raw)
		}
	})
	t.Run("EmptyBatch", func(t *testing.T) {
		if r := hs.PostBody(t, []byte("[]")); r.Status != 400 || r.Code() != gqledge.CodeBadRequest {
			t.Fatalf("%d %s", r.Status, r.Raw)
		}
	})
}

func TestCostExtension(t *testing.T) {
	hs := testutil.NewCountingServer(t, seedIncidents(t), server.Config{})
	for name, c := range map[string]struct {
		q       string
		nonzero bool
	}{
		"Query":           {`{ incident(id: "IL-0213") { id title } }`, true},
		"ValidationError": {`{ nope }`, false},
		"ParseError":      {`{ incidents(`, false},
		"FieldError":      {`{ incidents(first: 101) { totalCount } }`, true},
	} {
		t.Run(name, func(t *testing.T) {
			r := hs.Post(t, c.q, nil)
			if got := r.Cost(); got < 0 || (got > 0) != c.nonzero {
				t.Fatalf("extensions.cost %d: %s", got, r.Raw)
			}
		})
	}
	t.Run("ConnectionCostsPageTimesChildren", func(t *testing.T) {
		one := hs.Post(t, `{ incidents(first: 10) { nodes { id title } } }`, nil).Cost()
		two := hs.Post(t, `{ incidents(first: 20) { nodes { id title } } }`, nil).Cost()
		if one <= 0 || two-1 != 2*(one-1) {
			t.Fatalf("first: 10 costs %d, first: 20 costs %d", one, two)
		}
	})
}

// TestCostOfABodyKept: a POST body's cost is computed once and kept with
// the decoded body: the same document with other variables costs its own,
// a body sent again costs what it cost the first time, and an expensive
// one is refused every time it is sent.
func TestCostOfABodyKept(t *testing.T) {
	// Without the response cache, which would answer the bodies sent again.
	hs := testutil.NewCountingServer(t, seedIncidents(t), server.Config{Limits: gqledge.Limits{MaxCost: 500}, ResponseCacheBytes: -1})
	const q = `query($n: Int) { incidents(first: $n) { nodes { id related { id title } } } }`
	want := map[int]int{}
	for round := range 3 {
		for _, n := range []int{20, 1, 10} {
			r := hs.Post(t, q, map[string]any{"n": n})
			if round == 0 {
				want[n] = r.Cost()
			}
			if got := r.Cost(); got <= 0 || got != want[n] {
				t.Fatalf("round %d, first: %d: cost %d, first sent %d: %s", round, n, got, want[n], r.Raw)
			}
		}
	}
	if want[20] <= want[10] || want[10] <= want[1] {
		t.Fatalf("costs by page size: %v", want)
	}
	for range 2 {
		r := hs.Post(t, q, map[string]any{"n": 100})
		if r.Code() != gqledge.CodeCostLimit || r.Cost() <= 500 {
			t.Fatalf("an operation over the cost limit: %d %s", r.Status, r.Raw)
		}
	}
}

func TestGraphQLOverHTTP(t *testing.T) {
	hs := testutil.NewCountingServer(t, seedIncidents(t), server.Config{})
	const q = `{ incident(id: "IL-0213") { id } }`
	body, _ := json.Marshal(map[string]any{"query": q})
	req := func(method, ct, accept string, b []byte) *http.Request {
		r, _ := http.NewRequest(method, hs.URL+"/graphql", bytes.NewReader(b))
		if ct != "" {
			r.Header.Set("Content-Type", ct)
		}
		if accept != "" {
			r.Header.Set("Accept", accept)
		}
		return r
	}
	cases := []struct {
		name        string
		req         *http.Request
		status      int
		contentType string
	}{
		// application/json without Accept and for a wildcard, as the
		// GraphQL-over-HTTP specification asks (legacy clients).
		{"DefaultMediaType", req("POST", "application/json", "", body), 200, "application/json"},
		{"AcceptGraphQLResponse", req("POST", "application/json", "application/graphql-response+json", body), 200, "application/graphql-response+json"},
		{"AcceptBoth", req("POST", "application/json", "application/graphql-response+json, application/json", body), 200, "application/graphql-response+json"},
		{"AcceptJSON", req("POST", "application/json", "application/json", body), 200, "application/json"},
		{"AcceptByQuality", req("POST", "application/json", "application/graphql-response+json;q=0.5, application/json", body), 200, "application/json"},
		{"AcceptAny", req("POST", "application/json", "*/*", body), 200, "application/json"},
		{"AcceptApplicationAny", req("POST", "application/json", "application/*", body), 200, "application/json"},
		{"NotAcceptable406", req("POST", "application/json", "text/html", body), 406, "application/json"},
		{"NotAcceptableQZero406", req("POST", "application/json", "application/json;q=0", body), 406, "application/json"},
		{"UnsupportedMediaType415", req("POST", "text/plain", "", body), 415, "application/json"},
		{"NoContentType415", req("POST", "", "", body), 415, "application/json"},
		{"MalformedJSON400", req("POST", "application/json", "", []byte(`{"query": `)), 400, "application/json"},
		{"MalformedJSONGraphQLResponse400", req("POST", "application/json", "application/graphql-response+json", []byte(`{"query": `)), 400, "application/graphql-response+json"},
		{"ValidationErrorIs400", req("POST", "application/json", "application/graphql-response+json", []byte(`{"query": "{ nope }"}`)), 400, "application/graphql-response+json"},
		{"ValidationErrorAsJSONIs200", req("POST", "application/json", "application/json", []byte(`{"query": "{ nope }"}`)), 200, "application/json"},
		{"ValidationErrorNoAcceptIs200", req("POST", "application/json", "", []byte(`{"query": "{ nope }"}`)), 200, "application/json"},
		{"PutIs405", req("PUT", "application/json", "", body), 405, "application/json"},
		{"GetWithoutQuery400", req("GET", "", "application/graphql-response+json", nil), 400, "application/graphql-response+json"},
	}
	getOK, _ := http.NewRequest("GET", hs.URL+"/graphql?"+url.Values{"query": {q}}.Encode(), nil)
	cases = append(cases, struct {
		name        string
		req         *http.Request
		status      int
		contentType string
	}{"GetQueryOK", getOK, 200, "application/json"})
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			r := hs.Do(t, c.req)
			if r.Status != c.status || !strings.HasPrefix(r.Header.Get("Content-Type"), c.contentType) {
				t.Fatalf("status %d content type %q, want %d %s: %.300s", r.Status, r.Header.Get("Content-Type"), c.status, c.contentType, r.Raw)
			}
			if c.status == 405 && r.Header.Get("Allow") == "" {
				t.Fatal("405 without Allow")
			}
			// A request that fails before execution has no data entry
			// (the GraphQL specification's request error).
			if len(r.Errors) > 0 && bytes.Contains(r.Raw, []byte(`"data"`)) {
				t.Fatalf("a request error with a data entry: %s", r.Raw)
			}
		})
	}
	t.Run("MalformedJSONIsNotEchoed", func(t *testing.T) {
		secret := `{"query": "{ __typename }", "variables": {"password": "hunter2"`
		r := hs.PostBody(t, []byte(secret))
		if r.Status != 400 || r.Code() != gqledge.CodeBadRequest || bytes.Contains(r.Raw, []byte("hunter2")) {
			t.Fatalf("%d %s", r.Status, r.Raw)
		}
	})
}

// TestClientGone: a request whose client went away answers CANCELED and
// logs no internal error.
func TestClientGone(t *testing.T) {
	var cancel context.CancelFunc
	hs := testutil.NewCountingServer(t, seedIncidents(t), server.Config{Prod: true, Extensions: []graphql.HandlerExtension{
		fieldFunc(func(ctx context.Context, next graphql.Resolver) (any, error) {
			if graphql.GetFieldContext(ctx).Field.Name == "incident" {
				cancel()
			}
			return next(ctx)
		}),
	}})
	body, _ := json.Marshal(map[string]any{"query": `{ incident(id: "IL-0213") { id } }`})
	ctx, c := context.WithCancel(context.Background())
	cancel = c
	req := httptest.NewRequest(http.MethodPost, "/graphql", bytes.NewReader(body)).WithContext(ctx)
	req.Header.Set("Content-Type", "application/json")
	rec := httptest.NewRecorder()
	hs.Srv.ServeHTTP(rec, req)
	var resp testutil.GQLResult
	_ = json.Unmarshal(rec.Body.Bytes(), &resp)
	if resp.Code() != gqledge.CodeCanceled {
		t.Fatalf("%s", rec.Body.Bytes())
	}
	if strings.Contains(hs.Log.String(), "internal error") {
		t.Fatalf("logged as an internal error: %s", hs.Log.String())
	}
}

func TestProdMode(t *testing.T) {
	incs := seedIncidents(t)
	prod := testutil.NewCountingServer(t, incs, server.Config{Prod: true})
	dev := testutil.NewCountingServer(t, incs, server.Config{})
	t.Run("IntrospectionOff", func(t *testing.T) {
		for _, q := range []string{`{ __schema { types { name } } }`, `{ __type(name: "Incident") { name fields { name } } }`} {
			before := prod.Work()
			r := prod.Post(t, q, nil)
			if r.Status != 400 || r.Code() != gqledge.CodeIntrospectionOff || bytes.Contains(r.Raw, []byte("relatedIds")) {
				t.Fatalf("%s: %d %.300s", q, r.Status, r.Raw)
			}
			if prod.Work() != before {
				t.Fatal("resolvers ran")
			}
			if d := dev.Post(t, q, nil); len(d.Errors) > 0 {
				t.Fatalf("dev mode: %+v", d.Errors)
			}
		}
	})
	t.Run("IntrospectionFlag", func(t *testing.T) {
		on := testutil.NewCountingServer(t, incs, server.Config{Prod: true, Introspection: true})
		if r := on.Post(t, `{ __schema { queryType { name } } }`, nil); len(r.Errors) > 0 {
			t.Fatalf("%+v", r.Errors)
		}
	})
	t.Run("SuggestionsOff", func(t *testing.T) {
		for _, q := range []string{
			`{ incidnts { totalCount } }`,
			`{ incidents(frist: 1) { totalCount } }`,
			`{ taxonomy(kind: SYMPTOMS) { slug } }`,
			`{ incident(id: "IL-0213") { titl } }`,
		} {
			p, d := prod.Post(t, q, nil), dev.Post(t, q, nil)
			if len(p.Errors) == 0 || bytes.Contains(p.Raw, []byte("Did you mean")) {
				t.Errorf("prod %s: %s", q, p.Raw)
			}
			if !bytes.Contains(d.Raw, []byte("Did you mean")) {
				t.Errorf("dev mode suggests, or this case tests nothing: %s: %s", q, d.Raw)
			}
		}
	})
	t.Run("GraphiQLOff", func(t *testing.T) {
		req, _ := http.NewRequest(http.MethodGet, prod.URL+"/", nil)
		if r := prod.Do(t, req); r.Status != http.StatusNotFound {
			t.Fatalf("prod: %d", r.Status)
		}
		req, _ = http.NewRequest(http.MethodGet, dev.URL+"/", nil)
		if r := dev.Do(t, req); r.Status != 200 {
			t.Fatalf("dev: %d", r.Status)
		}
	})
	t.Run("SchemaPublished", func(t *testing.T) {
		req, _ := http.NewRequest(http.MethodGet, prod.URL+"/schema.graphql", nil)
		r := prod.Do(t, req)
		for _, want := range []string{"type Query", "type Incident implements Node", "input IncidentFilter", "An incident by id, such as IL-0213."} {
			if !bytes.Contains(r.Raw, []byte(want)) {
				t.Errorf("the SDL lacks %q", want)
			}
		}
		if r.Status != 200 {
			t.Fatalf("status %d", r.Status)
		}
	})
	t.Run("PanicIsGenericAndHasNoStack", func(t *testing.T) {
		panicky := testutil.NewCountingServer(t, incs, server.Config{Prod: true, Extensions: []graphql.HandlerExtension{
			fieldFunc(func(ctx context.Context, next graphql.Resolver) (any, error) {
				if graphql.GetFieldContext(ctx).Field.Name == "title" {
					panic("boom in a resolver")
				}
				return next(ctx)
			}),
		}})
		r := panicky.Post(t, `{ incident(id: "IL-0213") { id title } }`, nil)
		if r.Code() != incidentlib.EINTERNAL || r.Errors[0].Message != "internal error" {
			t.Fatalf("%s", r.Raw)
		}
		for _, leak := range []string{"boom", "goroutine", ".go:", "panic"} {
			if bytes.Contains(r.Raw, []byte(leak)) {
				t.Fatalf("the response leaks %q: %s", leak, r.Raw)
			}
		}
	})
	t.Run("InternalErrorHasRequestID", func(t *testing.T) {
		broken := testutil.NewCountingServer(t, incs, server.Config{Prod: true})
		if err := broken.DB.Close(); err != nil {
			t.Fatal(err)
		}
		r := broken.Post(t, `{ incidents(first: 1) { totalCount } }`, nil)
		id, _ := r.Ext("requestId").(string)
		if r.Code() != incidentlib.EINTERNAL || r.Errors[0].Message != "internal error" || id == "" || id != r.Header.Get("X-Request-Id") {
			t.Fatalf("id %q header %q: %s", id, r.Header.Get("X-Request-Id"), r.Raw)
		}
		if bytes.Contains(r.Raw, []byte("database")) {
			t.Fatalf("the response leaks the cause: %s", r.Raw)
		}
		found := false
		for _, line := range strings.Split(broken.Log.String(), "\n") {
			if strings.Contains(line, `"msg":"internal error"`) && strings.Contains(line, `"request_id":"`+id+`"`) {
				found = true
			}
		}
		if !found {
			t.Fatalf("no log line of the internal error with request_id %s:\n%s", id, broken.Log.String())
		}
	})
}

func TestCORS(t *testing.T) {
	hs := testutil.NewCountingServer(t, seedIncidents(t), server.Config{CORSOrigins: []string{"https://app.example.org", "http://localhost:3000"}})
	closed := testutil.NewCountingServer(t, seedIncidents(t), server.Config{})
	preflight := func(hs *testutil.CountingServer, origin string) *testutil.Reply {
		req, _ := http.NewRequest(http.MethodOptions, hs.URL+"/graphql", nil)
		req.Header.Set("Origin", origin)
		req.Header.Set("Access-Control-Request-Method", "POST")
		req.Header.Set("Access-Control-Request-Headers", "content-type")
		return hs.Do(t, req)
	}
	t.Run("AllowedPreflight", func(t *testing.T) {
		r := preflight(hs, "https://app.example.org")
		if r.Status != http.StatusNoContent || r.Header.Get("Access-Control-Allow-Origin") != "https://app.example.org" ||
			!strings.Contains(r.Header.Get("Access-Control-Allow-Methods"), "POST") || !strings.Contains(r.Header.Get("Access-Control-Allow-Headers"), "Content-Type") {
			t.Fatalf("%d %v", r.Status, r.Header)
		}
		// The headers docs/cluster.md and tracing ask clients to send.
		for _, h := range []string{"Authorization", "Idempotency-Key", "Traceparent", "Tracestate"} {
			if !strings.Contains(r.Header.Get("Access-Control-Allow-Headers"), h) {
				t.Fatalf("preflight does not allow %s: %v", h, r.Header)
			}
		}
	})
	t.Run("AllowedRequest", func(t *testing.T) {
		r := hs.Post(t, `{ __typename }`, nil, "Origin", "http://localhost:3000")
		if r.Header.Get("Access-Control-Allow-Origin") != "http://localhost:3000" || !strings.Contains(r.Header.Get("Vary"), "Origin") {
			t.Fatalf("%v", r.Header)
		}
		if r.Header.Get("Access-Control-Allow-Credentials") != "" {
			t.Fatal("credentials must never be allowed")
		}
	})
	t.Run("OtherOriginRefused", func(t *testing.T) {
		if r := preflight(hs, "https://evil.example.com"); r.Status != http.StatusForbidden || r.Header.Get("Access-Control-Allow-Origin") != "" {
			t.Fatalf("%d %v", r.Status, r.Header)
		}
		if r := hs.Post(t, `{ __typename }`, nil, "Origin", "https://evil.example.com"); r.Header.Get("Access-Control-Allow-Origin") != "" {
			t.Fatalf("%v", r.Header)
		}
	})
	t.Run("NoListNoCORS", func(t *testing.T) {
		if r := preflight(closed, "https://app.example.org"); r.Header.Get("Access-Control-Allow-Origin") != "" {
			t.Fatalf("%v", r.Header)
		}
	})
}

func TestConfigRefused(t *testing.T) {
	ts := newTestServer(t, nil)
	for name, cfg := range map[string]server.Config{
		"NegativeCost":        {Limits: gqledge.Limits{MaxCost: -1}},
		"NegativeBody":        {Limits: gqledge.Limits{MaxBody: -1}},
		"NegativeTimeout":     {Limits: gqledge.Limits{RequestTimeout: -time.Second}},
		"NegativeRate":        {RateLimit: gqledge.RateLimit{CostPerSecond: -1}},
		"BurstBelowCostLimit": {RateLimit: gqledge.RateLimit{CostPerSecond: 10, Burst: gqledge.DefaultMaxCost - 1}},
		"BadProxyHeader":      {RateLimit: gqledge.RateLimit{CostPerSecond: 10, TrustedProxyHeader: "X Forwarded"}},
		"OriginWithPath":      {CORSOrigins: []string{"https://example.org/app"}},
		"OriginWithoutScheme": {CORSOrigins: []string{"example.org"}},
	} {
		t.Run(name, func(t *testing.T) {
			if _, err := testutil.ServerOn(ts.DB, cfg, testutil.ServerParts{}); err == nil {
				t.Fatal("accepted")
			}
		})
	}
	t.Run("MemoryLimitBelowMinimum", func(t *testing.T) {
		if _, err := server.SetMemoryLimit(64 << 20); err == nil {
			t.Fatal("accepted")
		}
	})
}
