// Package e2e holds end-to-end tests that drive the real server from a
// real browser: Debian's chromium, headless, through chromedp.
//
// The browser is required: without it the test fails, it does not skip
// (make test installs chromium when it is missing: make system-deps).
// INCIDENTLIB_CHROMIUM names another binary. Screenshots are written to INCIDENTLIB_ARTIFACTS,
// else to e2e/artifacts/.
package e2e

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http/httptest"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/chromedp/cdproto/network"
	"github.com/chromedp/cdproto/runtime"
	"github.com/chromedp/chromedp"

	"github.com/incidentlib/incidentlib/internal/testutil"
	"github.com/incidentlib/incidentlib/server"
	"github.com/incidentlib/incidentlib/storage"
)

// graphqlResponse is one response of /graphql the page received.
type graphqlResponse struct {
	id     network.RequestID
	status int64
	body   []byte
}

// chromium finds the browser or fails the test.
func chromium(t *testing.T) string {
	t.Helper()
	if p := os.Getenv("INCIDENTLIB_CHROMIUM"); p != "" {
		return p
	}
	for _, name := range []string{"chromium", "chromium-browser", "google-chrome"} {
		if p, err := exec.LookPath(name); err == nil {
			return p
		}
	}
	t.Fatal("no chromium: install Debian's (make system-deps, as make test does) or set INCIDENTLIB_CHROMIUM")
	return ""
}

func artifactDir(t *testing.T) string {
	t.Helper()
	dir := os.Getenv("INCIDENTLIB_ARTIFACTS")
	if dir == "" {
		dir = "artifacts"
	}
	if err := os.MkdirAll(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	return dir
}

// TestGraphiQLRunsAnExample opens the playground of a dev server, checks
// that GraphiQL's schema loaded (the docs explorer lists Query's fields:
// its introspection passed the limits), runs the first example query (the
// list page) by clicking the run button, checks that the result pane shows
// incidents, then runs the second tab (an incident with its relations);
// every /graphql request the page sent must be answered 200 without
// errors, and the page must load nothing from anywhere but the server and
// throw no exception.
func TestGraphiQLRunsAnExample(t *testing.T) {
	browser := chromium(t)

	db := testutil.OpenSeeded(t, storage.Options{})
	srv, err := testutil.ServerOn(db, server.Config{}, testutil.ServerParts{})
	if err != nil {
		t.Fatal(err)
	}
	srv.SetReady(true)
	ts := httptest.NewServer(srv)
	defer ts.Close()

	opts := append(chromedp.DefaultExecAllocatorOptions[:],
		chromedp.ExecPath(browser),
		chromedp.Headless,
		chromedp.NoSandbox,
		chromedp.DisableGPU,
		chromedp.Flag("disable-background-networking", true),
		chromedp.Flag("disable-dev-shm-usage", true),
		chromedp.WindowSize(1400, 900),
	)
	actx, cancelAlloc := chromedp.NewExecAllocator(context.Background(), opts...)
	defer cancelAlloc()
	ctx, cancelCtx := chromedp.NewContext(actx)
	defer cancelCtx()

	// Every request the page makes, every response of /graphql, and every
	// exception it throws.
	var logMu sync.Mutex
	var exceptions, foreign []string
	var graphqlResponses []graphqlResponse
	err = chromedp.Listen(ctx, func(ev any) {
		logMu.Lock()
		defer logMu.Unlock()
		switch ev := ev.(type) {
		case *network.EventRequestWillBeSent:
			u := ev.Request.URL
			if !strings.HasPrefix(u, ts.URL+"/") && !strings.HasPrefix(u, "data:") && !strings.HasPrefix(u, "blob:") {
				foreign = append(foreign, u)
			}
		case *network.EventResponseReceived:
			if strings.HasPrefix(ev.Response.URL, ts.URL+"/graphql") {
				graphqlResponses = append(graphqlResponses, graphqlResponse{id: ev.RequestID, status: ev.Response.Status})
			}
		case *runtime.EventExceptionThrown:
			d := ev.ExceptionDetails
			msg := d.Text
			if d.Exception != nil && d.Exception.Description != "" {
				msg += " " + d.Exception.Description
			}
			exceptions = append(exceptions, fmt.Sprintf("%s (%s:%d)", msg, d.URL, d.LineNumber))
		}
	})
	if err != nil {
		t.Fatalf("start %s: %v", browser, err)
	}
	if _, err := chromedp.Call(ctx, network.Enable, network.EnableParams{}); err != nil {
		t.Fatal(err)
	}
	tctx, cancelTimeout := context.WithTimeout(ctx, 90*time.Second)
	defer cancelTimeout()

	var tabs int
	var editor, result, docs string
	var shot []byte
	err = func() error {
		if err := chromedp.Do(tctx,
			chromedp.Navigate(ts.URL+"/"),
			chromedp.WaitVisible(chromedp.CSS(".graphiql-execute-button")),
		); err != nil {
			return err
		}
		if tabs, err = chromedp.Run(tctx, chromedp.Evaluate[int](`document.querySelectorAll('.graphiql-tab').length`)); err != nil {
			return err
		}
		if editor, err = chromedp.Run(tctx, chromedp.Text(chromedp.CSS(".graphiql-query-editor"))); err != nil {
			return err
		}
		// The schema loaded: the docs explorer lists the fields of Query.
		if err := chromedp.Do(tctx, chromedp.Click(chromedp.CSS(`.graphiql-sidebar button[aria-label="Show Documentation Explorer"]`))); err != nil {
			return fmt.Errorf("the docs explorer's button: %w", err)
		}
		if _, err := chromedp.Run(tctx, chromedp.Poll[chromedp.Void](
			`(() => { const q = [...document.querySelectorAll('.graphiql-doc-explorer a')].find(a => a.innerText.trim() === 'Query'); if (q) { q.click(); return true } return false })()`,
			chromedp.WithPollingTimeout(30*time.Second))); err != nil {
			return fmt.Errorf("the docs explorer never showed the Query type (the schema did not load): %w", err)
		}
		if _, err := chromedp.Run(tctx, chromedp.Poll[chromedp.Void](
			`(() => { const d = document.querySelector('.graphiql-doc-explorer'); return !!d && d.innerText.includes('incidents') && d.innerText.includes('incident') && d.innerText.includes('organizations'); })()`,
			chromedp.WithPollingTimeout(30*time.Second))); err != nil {
			return fmt.Errorf("the docs explorer does not list Query's fields: %w", err)
		}
		if docs, err = chromedp.Run(tctx, chromedp.Text(chromedp.CSS(".graphiql-doc-explorer"))); err != nil {
			return err
		}
		if err := chromedp.Do(tctx, chromedp.Click(chromedp.CSS(".graphiql-execute-button"))); err != nil {
			return err
		}
		_, perr := chromedp.Run(tctx, chromedp.Poll[chromedp.Void](
			`(() => { const r = document.querySelector('.result-window'); return !!r && r.innerText.includes('"incidents"') && r.innerText.includes('IL-0'); })()`,
			chromedp.WithPollingTimeout(45*time.Second)))
		if perr != nil {
			return perr
		}
		if result, err = chromedp.Run(tctx, chromedp.Text(chromedp.CSS(".result-window"))); err != nil {
			return err
		}
		// The second tab: an incident with its relations, by variables.
		// GraphiQL takes the operation's name from the tab a moment after
		// the switch: wait until the editor shows the tab's query, and
		// run again if the first run went out with the previous name.
		if err := chromedp.Do(tctx,
			chromedp.Click(chromedp.CSS(".graphiql-tab:nth-child(2) .graphiql-tab-button")),
			chromedp.WaitVisible(chromedp.CSS(".graphiql-execute-button")),
		); err != nil {
			return err
		}
		if _, err := chromedp.Run(tctx, chromedp.Poll[chromedp.Void](
			`(() => { const e = document.querySelector('.graphiql-query-editor'); return !!e && e.innerText.includes('query IncidentPage'); })()`,
			chromedp.WithPollingTimeout(30*time.Second))); err != nil {
			return fmt.Errorf("the second tab's query never showed: %w", err)
		}
		// The tab's title is the operation name GraphiQL will send: once
		// it reads IncidentPage, the run goes out with it (an earlier
		// click sends ListPage with this document, which is an error).
		if _, err := chromedp.Run(tctx, chromedp.Poll[chromedp.Void](
			`(() => { const a = document.querySelector('.graphiql-tab.graphiql-tab-active, .graphiql-tab[aria-selected="true"]'); return !!a && a.innerText.includes('IncidentPage'); })()`,
			chromedp.WithPollingTimeout(30*time.Second))); err != nil {
			return fmt.Errorf("the second tab's operation name never showed: %w", err)
		}
		for attempt := 1; ; attempt++ {
			if err := chromedp.Do(tctx, chromedp.Click(chromedp.CSS(".graphiql-execute-button"))); err != nil {
				return err
			}
			_, err = chromedp.Run(tctx, chromedp.Poll[chromedp.Void](
				`(() => { const r = document.querySelector('.result-window'); return !!r && r.innerText.includes('"incident"') && r.innerText.includes('"IL-0216"'); })()`,
				chromedp.WithPollingTimeout(15*time.Second)))
			if err == nil || attempt == 3 {
				return err
			}
		}
	}()
	// The screenshot is taken either way: it shows what went wrong.
	shot, _ = chromedp.Run(tctx, chromedp.CaptureScreenshot())
	// The bodies of the page's GraphQL responses, read from the browser.
	logMu.Lock()
	responses := append([]graphqlResponse(nil), graphqlResponses...)
	logMu.Unlock()
	for i := range responses {
		res, berr := chromedp.Call(tctx, network.GetResponseBody, network.GetResponseBodyParams{RequestID: responses[i].id})
		if berr != nil {
			t.Errorf("the body of a /graphql response: %v", berr)
		}
		responses[i].body = res.Body
	}
	logMu.Lock()
	defer logMu.Unlock()
	if len(shot) > 0 {
		path := filepath.Join(artifactDir(t), "graphiql.png")
		if werr := os.WriteFile(path, shot, 0o644); werr != nil {
			t.Error(werr)
		} else {
			abs, _ := filepath.Abs(path)
			t.Logf("screenshot: %s", abs)
		}
	}
	if err != nil {
		t.Fatalf("browser: %v (page exceptions: %v)", err, exceptions)
	}
	if tabs < 3 {
		t.Errorf("%d tabs of examples, want at least 3 (list page, incident, facets)", tabs)
	}
	if !strings.Contains(editor, "ListPage") {
		t.Errorf("the first tab is not the list page: %.200s", editor)
	}
	if !strings.Contains(result, `"organization"`) || strings.Contains(result, `"errors"`) {
		t.Errorf("the result pane: %.500s", result)
	}
	if !strings.Contains(docs, "incidents") {
		t.Errorf("the docs explorer: %.300s", docs)
	}
	// Every request the page sent itself (its introspection first, then
	// the examples) was answered 200 without errors.
	if len(responses) < 3 {
		t.Errorf("%d responses of /graphql, want the introspection and two examples at least", len(responses))
	}
	for _, r := range responses {
		var m map[string]json.RawMessage
		if r.status != 200 || json.Unmarshal(r.body, &m) != nil || m["errors"] != nil {
			t.Errorf("the page's request was answered %d: %.500s", r.status, r.body)
		}
	}
	t.Logf("%d /graphql responses", len(responses))
	if len(foreign) > 0 {
		t.Errorf("the playground loaded from elsewhere: %v", foreign)
	}
	if len(exceptions) > 0 {
		t.Errorf("exceptions in the page: %v", exceptions)
	}
}
