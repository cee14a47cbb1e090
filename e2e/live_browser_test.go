package e2e

import (
	"context"
	"fmt"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/chromedp/chromedp"
)

// TestBrowserSubscribes opens the playground page in headless Chromium,
// subscribes from it with the graphql-ws client bundled into the embedded
// assets (the one GraphiQL's subscription tab uses), and sees a write
// arrive over the WebSocket.
func TestBrowserSubscribes(t *testing.T) {
	browser := chromium(t)
	ts, db, _ := liveServer(t)
	opts := append(chromedp.DefaultExecAllocatorOptions[:],
		chromedp.ExecPath(browser), chromedp.Headless, chromedp.NoSandbox, chromedp.DisableGPU,
		chromedp.Flag("disable-background-networking", true), chromedp.Flag("disable-dev-shm-usage", true),
	)
	actx, cancelAlloc := chromedp.NewExecAllocator(context.Background(), opts...)
	defer cancelAlloc()
	ctx, cancelCtx := chromedp.NewContext(actx)
	defer cancelCtx()
	tctx, cancel := context.WithTimeout(ctx, 90*time.Second)
	defer cancel()
	const subscribe = `(() => {
  window.liveEvents = []; window.liveErrors = [];
  const client = graphqlWs.createClient({ url: 'ws://' + location.host + '/graphql' });
  client.subscribe(
    { query: 'subscription { incidentChanged { seq action incidentId incident { title } } }' },
    { next: (r) => window.liveEvents.push(r), error: (e) => window.liveErrors.push(String(e && e.message || JSON.stringify(e))), complete: () => {} },
  );
  return true;
})()`
	if err := chromedp.Do(tctx, chromedp.Navigate(ts.URL+"/")); err != nil {
		t.Fatal(err)
	}
	if _, err := chromedp.Run(tctx, chromedp.Poll[chromedp.Void](`typeof graphqlWs === 'object' && typeof graphqlWs.createClient === 'function'`,
		chromedp.WithPollingTimeout(30*time.Second))); err != nil {
		t.Fatalf("the bundled client did not load: %v", err)
	}
	if _, err := chromedp.Run(tctx, chromedp.Evaluate[bool](subscribe)); err != nil {
		t.Fatalf("subscribe: %v", err)
	}
	// Write until the page has an event: the subscription starts once the
	// socket is open, which the page does not announce.
	var stop atomic.Bool
	done := make(chan struct{})
	go func() {
		defer close(done)
		for i := 0; !stop.Load(); i++ {
			retitle(t, db, "IL-0216", fmt.Sprintf("seen in the browser %d", i))
			time.Sleep(100 * time.Millisecond)
		}
	}()
	_, err := chromedp.Run(tctx, chromedp.Poll[chromedp.Void](`window.liveEvents.length > 0 || window.liveErrors.length > 0`,
		chromedp.WithPollingTimeout(60*time.Second)))
	var title string
	if err == nil {
		title, err = chromedp.Run(tctx, chromedp.Evaluate[string](
			`window.liveErrors.length ? 'error: ' + window.liveErrors.join('; ') : window.liveEvents[0].data.incidentChanged.incident.title`))
	}
	stop.Store(true)
	<-done
	if err != nil {
		t.Fatal(err)
	}
	if !strings.HasPrefix(title, "seen in the browser ") {
		t.Fatalf("the page got %q", title)
	}
}
