package e2e

import (
	"bufio"
	"context"
	"encoding/json"
	"fmt"
	"net/http/httptest"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/incidentlib/incidentlib"
	"github.com/incidentlib/incidentlib/internal/testutil"
	"github.com/incidentlib/incidentlib/server"
	"github.com/incidentlib/incidentlib/storage"
)

// Subscriptions with the JavaScript clients frontends use, graphql-ws and
// graphql-sse (the versions pinned in package-lock.json), against the
// real handler on loopback.

// liveServer serves the seed incidents with subscriptions.
func liveServer(t *testing.T) (*httptest.Server, *storage.DB, *server.Server) {
	t.Helper()
	db := testutil.OpenSeeded(t, storage.Options{})
	ts, srv := testutil.ServerTest(t, db, server.Config{}, testutil.ServerParts{})
	t.Cleanup(srv.StopSubscriptions)
	return ts, db, srv
}

// retitle writes a new title to the seed incident id and
// returns the store's sequence after it.
func retitle(t testing.TB, db *storage.DB, id, title string) uint64 {
	recs, err := db.Incidents().FindIncidentsByIDs(context.Background(), []string{id})
	if err != nil || len(recs) != 1 || recs[0] == nil {
		t.Errorf("read %s: %v", id, err)
		return 0
	}
	inc := *recs[0]
	inc.Title.En, inc.UpdatedAt, inc.Review = title, "", incidentlib.Review{}
	if _, err := db.Incidents().UpsertIncident(context.Background(), &inc, incidentlib.WriteOptions{}); err != nil {
		t.Errorf("write %s: %v", id, err)
	}
	return db.Incidents().Seq()
}

type clientLine struct {
	Data *struct {
		IncidentChanged struct {
			Seq, Action string
			ID          string `json:"incidentId"`
			Incident    *struct{ ID, Title string }
		}
	}
	Errors []map[string]any
	Error  json.RawMessage
	Status int
	Done   bool
}

// runClient runs live.mjs with args and returns its lines; while it runs,
// write (if not nil) is called every 50ms, so that a client that has
// subscribed sees writes whenever its subscription started.
func runClient(t *testing.T, write func(i int), args ...string) []clientLine {
	t.Helper()
	node := nodeAudit(t)
	if _, err := os.Stat(filepath.Join("node_modules", "graphql-ws", "package.json")); err != nil {
		t.Fatal("no e2e/node_modules/graphql-ws: run `npm ci` in e2e/ (as make test does)")
	}
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	cmd := exec.CommandContext(ctx, node, append([]string{"live.mjs"}, args...)...)
	var stderr strings.Builder
	cmd.Stderr = &stderr
	stdout, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	stop := writeEvery(write)
	var lines []clientLine
	sc := bufio.NewScanner(stdout)
	sc.Buffer(nil, 1<<20)
	for sc.Scan() {
		var l clientLine
		if err := json.Unmarshal(sc.Bytes(), &l); err != nil {
			t.Fatalf("%s: %v", sc.Bytes(), err)
		}
		lines = append(lines, l)
	}
	err = cmd.Wait()
	stop()
	if err != nil {
		t.Fatalf("node live.mjs %s: %v\n%s", strings.Join(args, " "), err, stderr.String())
	}
	return lines
}

func TestSubscriptionJSClients(t *testing.T) {
	ts, db, _ := liveServer(t)
	secret, _, err := db.Tokens().CreateToken(context.Background(), "js-client", incidentlib.RoleEditor, time.Time{})
	if err != nil {
		t.Fatal(err)
	}
	for _, transport := range []string{"ws", "sse"} {
		t.Run(transport, func(t *testing.T) {
			// Three events arrive, in order, with the records as written.
			lines := runClient(t, func(i int) { retitle(t, db, "IL-0213", fmt.Sprintf("%s %d", transport, i)) },
				ts.URL, transport, "3", "", secret)
			if len(lines) != 4 || !lines[3].Done {
				t.Fatalf("%+v", lines)
			}
			var last uint64
			for _, l := range lines[:3] {
				if l.Data == nil || len(l.Errors) > 0 {
					t.Fatalf("%+v", l)
				}
				c := l.Data.IncidentChanged
				seq, _ := strconv.ParseUint(c.Seq, 10, 64)
				if seq <= last || c.ID != "IL-0213" || c.Action != "UPDATE" || c.Incident == nil || !strings.HasPrefix(c.Incident.Title, transport+" ") {
					t.Fatalf("%+v after seq %d", c, last)
				}
				last = seq
			}
			// Resume: after a seq, the changes since then, each once.
			from := db.Incidents().Seq()
			s1 := retitle(t, db, "IL-0214", transport+" resumed one")
			s2 := retitle(t, db, "IL-0215", transport+" resumed two")
			lines = runClient(t, nil, ts.URL, transport, "2", strconv.FormatUint(from, 10))
			if len(lines) != 3 || lines[0].Data == nil || lines[1].Data == nil ||
				lines[0].Data.IncidentChanged.Seq != strconv.FormatUint(s1, 10) || lines[1].Data.IncidentChanged.Seq != strconv.FormatUint(s2, 10) {
				t.Fatalf("%+v", lines)
			}
			// A since above the head is refused before any event: over
			// WebSocket an error message, over SSE a result with the
			// errors, then the end (live_refusal_test.go).
			lines = runClient(t, nil, ts.URL, transport, "1", strconv.FormatUint(db.Incidents().Seq()+1000, 10))
			if transport == "ws" && (len(lines) != 1 || !strings.Contains(string(lines[0].Error), incidentlib.ESEQUENCEAHEAD)) {
				t.Fatalf("%+v", lines)
			}
			if transport == "sse" && (len(lines) != 2 || lines[0].Data != nil || len(lines[0].Errors) == 0 ||
				lines[0].Errors[0]["extensions"].(map[string]any)["code"] != incidentlib.ESEQUENCEAHEAD || !lines[1].Done) {
				t.Fatalf("%+v", lines)
			}
		})
	}
}
