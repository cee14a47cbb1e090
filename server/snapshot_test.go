package server_test

import (
	"bytes"
	"compress/gzip"
	"context"
	"encoding/json"
	"io"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/incidentlib/incidentlib"
	"github.com/incidentlib/incidentlib/internal/testutil"
	"github.com/incidentlib/incidentlib/server"
	"github.com/incidentlib/incidentlib/server/gqledge"
	"github.com/incidentlib/incidentlib/server/restapi"
	"github.com/incidentlib/incidentlib/storage"
)

// snapshotStore is the export corpus with a record that carries an
// unknown member (written back as json.Marshal escapes it) and one
// withdrawn incident; it returns the store and the withdrawn id.
func snapshotStore(t *testing.T) (*storage.DB, string) {
	t.Helper()
	incs := exportCorpus(t)
	b, err := json.Marshal(incs[1])
	if err != nil {
		t.Fatal(err)
	}
	var extra incidentlib.Incident
	if err := json.Unmarshal(append([]byte(`{"x_note":"<b>a & b</b>",`), b[1:]...), &extra); err != nil || len(extra.Extra) == 0 {
		t.Fatalf("a record with an unknown member: %v", err)
	}
	incs[1] = &extra
	db := testutil.ServerStore(t, incs, storage.Options{})
	w := incs[len(incs)-5].ID
	if _, err := db.Incidents().WithdrawIncident(context.Background(), w, "a duplicate", incidentlib.WriteOptions{}); err != nil {
		t.Fatal(err)
	}
	return db, w
}

// gunzip returns the body of a snapshot, failing on a body that is not a
// whole gzip stream.
func gunzip(t *testing.T, b []byte) []byte {
	t.Helper()
	zr, err := gzip.NewReader(bytes.NewReader(b))
	if err != nil {
		t.Fatalf("not gzip: %v", err)
	}
	out, err := io.ReadAll(zr)
	if err != nil {
		t.Fatalf("a broken gzip stream: %v", err)
	}
	return out
}

// listedExport is what `incidentlib export` writes for the store (its
// Maintenance().Export), without the lines of incidents lists leave out.
func listedExport(t *testing.T, db *storage.DB) (listed []byte, all int) {
	t.Helper()
	var buf bytes.Buffer
	if err := db.Maintenance().Export(context.Background(), &buf); err != nil {
		t.Fatal(err)
	}
	for line := range bytes.Lines(buf.Bytes()) {
		all++
		var inc incidentlib.Incident
		if err := json.Unmarshal(line, &inc); err != nil {
			t.Fatal(err)
		}
		if inc.Listed() {
			listed = append(listed, line...)
		}
	}
	return listed, all
}

// TestSnapshotIsTheExport: the snapshot, gunzipped, is byte for byte the
// lines `incidentlib export` writes for the incidents lists show (the
// withdrawn one left out, a record's unknown member and its authors as
// stored), each line an IL-JSON record; it is served as a gzip file with
// a dated name.
func TestSnapshotIsTheExport(t *testing.T) {
	db, withdrawn := snapshotStore(t)
	ts := serveStore(t, db, server.Config{}, testutil.ServerParts{})
	for _, name := range []string{"Streamed", "FromTheCache"} {
		t.Run(name, func(t *testing.T) {
			before := time.Now().UTC().Format(time.DateOnly)
			resp, b := httpGet(t, ts.URL+restapi.SnapshotPath, nil)
			after := time.Now().UTC().Format(time.DateOnly)
			if resp.StatusCode != http.StatusOK || resp.Header.Get("Content-Type") != "application/gzip" || resp.Header.Get("Content-Encoding") != "" {
				t.Fatalf("%d %q %q", resp.StatusCode, resp.Header.Get("Content-Type"), resp.Header.Get("Content-Encoding"))
			}
			cd := resp.Header.Get("Content-Disposition")
			if cd != `attachment; filename="incidentlib-snapshot-`+before+`.jsonl.gz"` && cd != `attachment; filename="incidentlib-snapshot-`+after+`.jsonl.gz"` {
				t.Errorf("Content-Disposition %q", cd)
			}
			got := gunzip(t, b)
			want, all := listedExport(t, db)
			if !bytes.Equal(got, want) {
				t.Fatalf("the snapshot (%d bytes) is not the export's listed lines (%d bytes)", len(got), len(want))
			}
			n := 0
			for line := range bytes.Lines(got) {
				n++
				var inc incidentlib.Incident
				if err := json.Unmarshal(line, &inc); err != nil || !strings.HasSuffix(string(line), "}\n") {
					t.Fatalf("line %d: %v %.200s", n, err, line)
				}
				if inc.ID == withdrawn || !inc.Listed() {
					t.Fatalf("line %d holds %s, which lists leave out", n, inc.ID)
				}
			}
			if n != all-1 || !bytes.Contains(got, []byte(`"x_note":"\u003cb\u003ea \u0026 b\u003c/b\u003e"`)) || !bytes.Contains(got, []byte(`"written_by":"gen"`)) {
				t.Fatalf("%d lines of %d records; the unknown member and the authors as stored", n, all)
			}
		})
	}
	t.Run("Parameters", func(t *testing.T) {
		resp, b := httpGet(t, ts.URL+restapi.SnapshotPath+"?reviewStates=WITHDRAWN", nil)
		var body struct{ Error struct{ Code string } }
		if resp.StatusCode != http.StatusBadRequest || json.Unmarshal(b, &body) != nil || body.Error.Code != incidentlib.EINVALID || resp.Header.Get("Content-Disposition") != "" {
			t.Fatalf("%d %s", resp.StatusCode, b)
		}
	})
}

// TestSnapshotETag: the ETag is the store's state: If-None-Match is 304
// without a body, HEAD answers the headers alone, and a write changes the
// ETag and the body.
func TestSnapshotETag(t *testing.T) {
	db, _ := snapshotStore(t)
	ts := serveStore(t, db, server.Config{}, testutil.ServerParts{})
	u := ts.URL + restapi.SnapshotPath
	resp, b := httpGet(t, u, nil)
	etag := resp.Header.Get("Etag")
	if resp.StatusCode != http.StatusOK || !strings.HasPrefix(etag, `"`) {
		t.Fatalf("%d, a strong ETag %q", resp.StatusCode, etag)
	}
	resp2, b2 := httpGet(t, u, map[string]string{"If-None-Match": etag})
	if resp2.StatusCode != http.StatusNotModified || len(b2) != 0 || resp2.Header.Get("Content-Disposition") != "" {
		t.Fatalf("If-None-Match: %d, %d bytes", resp2.StatusCode, len(b2))
	}
	head, err := http.Head(u)
	if err != nil {
		t.Fatal(err)
	}
	hb, _ := io.ReadAll(head.Body)
	head.Body.Close()
	if head.StatusCode != http.StatusOK || head.Header.Get("Etag") != etag || head.Header.Get("Content-Type") != "application/gzip" ||
		!strings.HasPrefix(head.Header.Get("Content-Disposition"), "attachment;") || len(hb) != 0 {
		t.Fatalf("HEAD: %d %v", head.StatusCode, head.Header)
	}
	inc := changed(t, db)
	if _, err := db.Incidents().UpsertIncident(context.Background(), inc, incidentlib.WriteOptions{}); err != nil {
		t.Fatal(err)
	}
	resp3, b3 := httpGet(t, u, map[string]string{"If-None-Match": etag})
	if resp3.StatusCode != http.StatusOK || resp3.Header.Get("Etag") == etag {
		t.Fatalf("after a write: %d, ETag %q", resp3.StatusCode, resp3.Header.Get("Etag"))
	}
	title, _ := json.Marshal(inc.Title.En)
	if got := gunzip(t, b3); bytes.Equal(got, gunzip(t, b)) || !bytes.Contains(got, title) {
		t.Fatalf("after a write the snapshot lacks the new title %s", title)
	}
}

// TestEveryExportIsAListAndLimited walks every export MountExports serves
// (restapi.ExportPaths, so the next one cannot be forgotten): each leaves
// out a withdrawn incident and shows a listed one, and each counts
// against the client's rate limit.
func TestEveryExportIsAListAndLimited(t *testing.T) {
	incs, _, c, w, _ := visibilityStore(t)
	db := testutil.ServerStore(t, incs, storage.Options{})
	if _, err := db.Incidents().WithdrawIncident(context.Background(), w.ID, "a duplicate", incidentlib.WriteOptions{}); err != nil {
		t.Fatal(err)
	}
	ts := serveStore(t, db, server.Config{}, testutil.ServerParts{})
	limited := serveStore(t, db, server.Config{RateLimit: gqledge.RateLimit{CostPerSecond: 0.001}}, testutil.ServerParts{})
	for _, path := range restapi.ExportPaths() {
		t.Run("Listed"+path, func(t *testing.T) {
			resp, b := httpGet(t, ts.URL+path, nil)
			if resp.Header.Get("Content-Type") == restapi.SnapshotContentType {
				// The records' own ids (a listed record may link to w).
				var ids []string
				for line := range bytes.Lines(gunzip(t, b)) {
					var inc incidentlib.Incident
					if err := json.Unmarshal(line, &inc); err != nil {
						t.Fatal(err)
					}
					ids = append(ids, inc.ID)
				}
				b = []byte(strings.Join(ids, " "))
			}
			if resp.StatusCode != http.StatusOK || bytes.Contains(b, []byte(w.ID)) || !bytes.Contains(b, []byte(c.ID)) {
				t.Errorf("%d: want %s and not the withdrawn %s\n%.300s", resp.StatusCode, c.ID, w.ID, b)
			}
		})
		t.Run("RateLimited"+path, func(t *testing.T) {
			// The CSV export empties the bucket (it costs the cost limit).
			_, _ = httpGet(t, limited.URL+"/api/v1/incidents.csv", nil)
			resp, b := httpGet(t, limited.URL+path, nil)
			var body struct{ Error struct{ Code string } }
			if resp.StatusCode != http.StatusTooManyRequests || resp.Header.Get("Retry-After") == "" || json.Unmarshal(b, &body) != nil ||
				body.Error.Code != gqledge.CodeRateLimited || resp.Header.Get("Content-Disposition") != "" {
				t.Fatalf("%d %s", resp.StatusCode, b)
			}
		})
	}
}
