package server_test

import (
	"bufio"
	"net/http"
	"strings"
	"testing"

	"github.com/incidentlib/incidentlib/internal/testutil"
	"github.com/incidentlib/incidentlib/server"
)

// TestGraphiQLLiveTab runs GraphiQL's subscription example over SSE and
// sees a write arrive.
func TestGraphiQLLiveTab(t *testing.T) {
	f := testutil.NewLive(t, 5, server.Config{})
	var tab *server.ExampleTab
	for _, x := range server.ExampleTabs() {
		if strings.Contains(x.Query, "subscription ") {
			tab = &x
		}
	}
	if tab == nil {
		t.Fatal("no subscription tab")
	}
	resp, err := http.DefaultClient.Do(testutil.SSEPost(f.HS.URL, tab.Query))
	if err != nil || resp.StatusCode != 200 {
		t.Fatalf("%v %v", err, resp)
	}
	defer resp.Body.Close()
	f.Write(t, 1, "from the tab", "")
	sc := bufio.NewScanner(resp.Body)
	sc.Buffer(nil, 1<<20)
	for sc.Scan() {
		if d, ok := strings.CutPrefix(sc.Text(), "data: "); ok {
			if !strings.Contains(d, `"title":"from the tab"`) || strings.Contains(d, `"errors"`) {
				t.Fatalf("%s", d)
			}
			return
		}
	}
	t.Fatal("no event")
}
