package outbound_test

import (
	"context"
	"go/ast"
	"go/parser"
	"go/token"
	"io/fs"
	"net/http"
	"net/http/httptest"
	"path/filepath"
	"strings"
	"testing"

	"github.com/incidentlib/incidentlib/outbound"
	"github.com/incidentlib/incidentlib/tracing"
)

// TestOutboundCarriesTrace: with tracing on, a request sent through the
// one client carries the caller's W3C traceparent and tracestate (the
// upstream, follower, replica and link-check requests all go through it:
// TestOneOutboundClient).
func TestOutboundCarriesTrace(t *testing.T) {
	sink := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {}))
	defer sink.Close()
	shutdown, err := tracing.Setup(context.Background(), func(k string) string {
		return map[string]string{"OTEL_EXPORTER_OTLP_ENDPOINT": sink.URL}[k]
	})
	if err != nil {
		t.Fatal(err)
	}
	defer func() { _ = shutdown(context.Background()) }()
	var got http.Header
	peer := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { got = r.Header.Clone() }))
	defer peer.Close()
	c, err := outbound.New(outbound.DefaultConfig(), nil)
	if err != nil {
		t.Fatal(err)
	}
	// The caller's context: an incoming request's trace, as tracing.HTTP
	// makes it.
	in := http.Header{}
	in.Set("traceparent", "00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01")
	in.Set("tracestate", "vendor=opaque")
	ctx := tracing.Extract(context.Background(), in)
	ctx, span := tracing.Start(ctx, "caller")
	defer span.End()
	req, _ := http.NewRequestWithContext(ctx, http.MethodGet, peer.URL, nil)
	resp, err := c.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	tp := got.Get("traceparent")
	want := "00-4bf92f3577b34da6a3ce929d0e0e4736-" + span.SpanContext().SpanID().String() + "-01"
	if tp != want || got.Get("tracestate") != "vendor=opaque" {
		t.Fatalf("outbound request carried traceparent %q tracestate %q, want %q", tp, got.Get("tracestate"), want)
	}
}

// TestOneOutboundClient enumerates the program's outbound HTTP paths: no
// code outside this package (tests and the load generator aside) sends a
// request with net/http's own clients or transports, so each one goes
// through outbound.Client and gets its limits, retries, breaker and trace
// context. internal/testutil is test helpers (only tests import it), and
// localOnly lists the files whose client never leaves the machine.
func TestOneOutboundClient(t *testing.T) {
	root := ".."
	localOnly := map[string]string{
		"cmd/incidentlib/controlsocket.go": "the token command's client of the control socket, a Unix socket beside the store",
	}
	forbidden := map[string]bool{"DefaultClient": true, "DefaultTransport": true, "Get": true, "Post": true, "Head": true, "PostForm": true}
	err := filepath.WalkDir(root, func(path string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		rel, _ := filepath.Rel(root, path)
		if d.IsDir() {
			switch rel {
			case "outbound", "cmd/incidentlib-bench", "e2e", "node_modules", ".git", "testdata", "internal/testutil":
				return filepath.SkipDir
			}
			return nil
		}
		if !strings.HasSuffix(path, ".go") || strings.HasSuffix(path, "_test.go") || localOnly[filepath.ToSlash(rel)] != "" {
			return nil
		}
		f, err := parser.ParseFile(token.NewFileSet(), path, nil, 0)
		if err != nil {
			return err
		}
		ast.Inspect(f, func(n ast.Node) bool {
			switch n := n.(type) {
			case *ast.SelectorExpr:
				if x, ok := n.X.(*ast.Ident); ok && x.Name == "http" && forbidden[n.Sel.Name] {
					t.Errorf("%s: http.%s: outbound requests go through outbound.Client", rel, n.Sel.Name)
				}
			case *ast.CompositeLit:
				if s, ok := n.Type.(*ast.SelectorExpr); ok {
					if x, ok := s.X.(*ast.Ident); ok && x.Name == "http" && (s.Sel.Name == "Client" || s.Sel.Name == "Transport") {
						t.Errorf("%s: an http.%s of its own: outbound requests go through outbound.Client", rel, s.Sel.Name)
					}
				}
			}
			return true
		})
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
}
