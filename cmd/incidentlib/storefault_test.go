package main

import (
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"testing"

	"github.com/incidentlib/incidentlib"
	"github.com/incidentlib/incidentlib/internal/testutil"
)

// TestStoreFaultsRealBinary runs the real program on damaged, empty and
// full store files: it says what is wrong, with no Go stack, and keeps
// what was stored.
func TestStoreFaultsRealBinary(t *testing.T) {
	if testing.Short() {
		t.Skip("builds and runs the real binary")
	}
	bin := buildBinary(t)
	t.Run("DamagedFile", func(t *testing.T) { testDamagedFile(t, bin) })
	t.Run("EmptyFile", func(t *testing.T) { testEmptyFile(t, bin) })
	t.Run("DamageUnderServer", func(t *testing.T) { testDamageUnderServer(t, bin) })
	t.Run("FullDisk", func(t *testing.T) { testFullDisk(t, bin) })
}

// noStack fails the test if out holds a Go panic or stack trace.
func noStack(t *testing.T, what, out string) {
	t.Helper()
	if strings.Contains(out, "panic:") || strings.Contains(out, "goroutine ") {
		t.Errorf("%s printed a Go panic or stack:\n%s", what, out)
	}
}

// testDamagedFile: check and serve on a file damaged at a page boundary
// (truncated, flipped bytes in a branch and a leaf page, a zeroed page)
// name the file and the page, say to restore from a backup and exit
// non-zero; serve does not start.
func testDamagedFile(t *testing.T, bin string) {
	for _, d := range testutil.Damages {
		t.Run(string(d), func(t *testing.T) {
			path, _ := testutil.StoreFile(t, 300)
			page := testutil.Break(t, path, d)
			stdout, stderr, code := runBin(t, bin, "check", "--db", path, "--search-index", "off")
			noStack(t, "check", stdout+stderr)
			if code == 0 || !strings.Contains(stdout, path) || !strings.Contains(stdout, "page ") ||
				!strings.Contains(stdout, "backup") || !strings.Contains(stdout, incidentlib.ESTORECORRUPT) {
				t.Errorf("check of a file damaged at page %d: exit %d\n%s%s", page, code, stdout, stderr)
			}
			stdout, stderr, code = runBin(t, bin, "serve", "--db", path, "--addr", "127.0.0.1:0", "--seed", "none", "--search-index", "off")
			noStack(t, "serve", stdout+stderr)
			if code == 0 || strings.Contains(stdout, "serving on") || !strings.Contains(stderr, path) ||
				!strings.Contains(stderr, "corrupt") || !strings.Contains(stderr, "backup") {
				t.Errorf("serve on a file damaged at page %d: exit %d\n%s%s", page, code, stdout, stderr)
			}
		})
	}
}

// testEmptyFile: an existing zero-length file is refused, by serve and
// check; the file stays as it was.
func testEmptyFile(t *testing.T, bin string) {
	path := filepath.Join(t.TempDir(), "empty.db")
	if err := os.WriteFile(path, nil, 0o600); err != nil {
		t.Fatal(err)
	}
	for _, args := range [][]string{
		{"serve", "--db", path, "--addr", "127.0.0.1:0", "--seed", "none", "--search-index", "off"},
		{"check", "--db", path, "--search-index", "off"},
	} {
		stdout, stderr, code := runBin(t, bin, args...)
		noStack(t, args[0], stdout+stderr)
		if code == 0 || strings.Contains(stdout, "serving on") || !strings.Contains(stderr, "empty") || !strings.Contains(stderr, path) {
			t.Errorf("%s on an empty file: exit %d\n%s%s", args[0], code, stdout, stderr)
		}
	}
	if fi, err := os.Stat(path); err != nil || fi.Size() != 0 {
		t.Errorf("the empty file changed: %v %v", fi, err)
	}
}

// gql posts a GraphQL request and returns the status, headers and decoded
// body.
func gql(t *testing.T, base, token, query string, vars map[string]any) (int, http.Header, map[string]any) {
	t.Helper()
	body, _ := json.Marshal(map[string]any{"query": query, "variables": vars})
	req, _ := http.NewRequest(http.MethodPost, base+"/graphql", bytes.NewReader(body))
	req.Header.Set("Content-Type", "application/json")
	if token != "" {
		req.Header.Set("Authorization", "Bearer "+token)
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	raw, _ := io.ReadAll(resp.Body)
	var out map[string]any
	if err := json.Unmarshal(raw, &out); err != nil {
		t.Fatalf("status %d, body %s: %v", resp.StatusCode, raw, err)
	}
	out["raw"] = string(raw)
	return resp.StatusCode, resp.Header, out
}

// firstError returns the first GraphQL error's message and extensions.
func firstError(out map[string]any) (string, map[string]any) {
	errs, _ := out["errors"].([]any)
	if len(errs) == 0 {
		return "", nil
	}
	e, _ := errs[0].(map[string]any)
	msg, _ := e["message"].(string)
	ext, _ := e["extensions"].(map[string]any)
	return msg, ext
}

func get(t *testing.T, url string) (int, string) {
	t.Helper()
	resp, err := http.Get(url)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	return resp.StatusCode, string(b)
}

// testDamageUnderServer damages the file under a running server, as a
// failing disk would: GraphQL and REST clients get an internal error with
// a request id that names no file, /readyz turns 503, the log has one
// line naming the file and the page, and the process goes on.
func testDamageUnderServer(t *testing.T, bin string) {
	path, incs := testutil.StoreFile(t, 300)
	layout := testutil.Layout(t, path)
	p := startServeUnder(t, nil, bin, path, "--record-cache", "0", "--search-index", "off", "--response-cache-size", "0")
	page := testutil.BreakAt(t, path, layout, testutil.ZeroedPage)
	id := incs[0].ID // the first leaf holds the lowest ids
	for range 3 {
		status, _, out := gql(t, p.base, "", `query($id: ID!) { incident(id: $id) { id title(lang: EN) } }`, map[string]any{"id": id})
		msg, ext := firstError(out)
		if ext["code"] != incidentlib.ESTORECORRUPT || msg != "internal error" || ext["requestId"] == nil || ext["requestId"] == "" {
			t.Fatalf("a read of the damaged page: status %d %s", status, out["raw"])
		}
		if strings.Contains(out["raw"].(string), path) || strings.Contains(out["raw"].(string), filepath.Base(path)) {
			t.Fatalf("the answer names the file: %s", out["raw"])
		}
	}
	status, body := get(t, p.base+"/api/v1/incidents/"+id)
	if status != http.StatusInternalServerError || strings.Contains(body, filepath.Base(path)) || !strings.Contains(body, incidentlib.ESTORECORRUPT) {
		t.Errorf("REST read of the damaged page: %d %s", status, body)
	}
	if status, body := get(t, p.base+"/readyz"); status != http.StatusServiceUnavailable {
		t.Errorf("/readyz of a corrupt store: %d %s", status, body)
	}
	if status, _ := get(t, p.base+"/healthz"); status != http.StatusOK {
		t.Errorf("the process does not answer /healthz: %d", status)
	}
	if _, metrics := get(t, p.base+"/metrics"); !strings.Contains(metrics, "incidentlib_store_corrupt 1") {
		t.Errorf("/metrics does not say the store is corrupt")
	}
	logs := p.stderr.String()
	noStack(t, "serve", logs)
	var lines []string
	for _, l := range strings.Split(logs, "\n") {
		if strings.Contains(l, incidentlib.ESTORECORRUPT) || strings.Contains(l, "internal error") {
			lines = append(lines, l)
		}
	}
	if len(lines) != 1 || !strings.Contains(lines[0], path) || !strings.Contains(lines[0], `"page":`+strconv.FormatInt(page, 10)) ||
		!strings.Contains(lines[0], "backup") {
		t.Errorf("want one log line naming %s and page %d, got:\n%s", path, page, strings.Join(lines, "\n"))
	}
}

// testFullDisk runs the server under a file-size limit (RLIMIT_FSIZE:
// writes past it fail with EFBIG, as on a full disk): writes that need the
// file to grow answer STORAGE_FULL (503, Retry-After) and write nothing;
// what was acknowledged stays; check is clean after; and a restart on a
// disk where the search index cannot be saved serves from memory.
func testFullDisk(t *testing.T, bin string) {
	prlimit, err := exec.LookPath("prlimit")
	if err != nil {
		t.Skip("no prlimit (util-linux) to run the server under a file-size limit")
	}
	path, incs := testutil.StoreFile(t, 300)
	fi, err := os.Stat(path)
	if err != nil {
		t.Fatal(err)
	}
	limit := []string{prlimit, fmt.Sprintf("--fsize=%d", fi.Size()), "--"}
	p := startServeUnder(t, limit, bin, path, "--search-index", "off")
	const upsert = `mutation($input: IncidentInput!) { upsertIncident(input: $input) { incident { id } userErrors { code message } } }`
	long := strings.Repeat("The disk filled up while the write was in flight. ", 400) // ~20 KB
	var acked []string
	full := false
	for i := range 400 {
		id := incidentlib.FormatID(uint32(9000 + i))
		input := map[string]any{"id": id, "org": "Full Disk", "orgSlug": "full-disk", "title": map[string]any{"en": "Xylophonia " + id},
			"summary": map[string]any{"en": long}, "domain": []string{"database"}}
		status, hdr, out := gql(t, p.base, crashToken, upsert, map[string]any{"input": input})
		msg, ext := firstError(out)
		if ext == nil {
			if status != http.StatusOK {
				t.Fatalf("write %d: status %d %s", i, status, out["raw"])
			}
			acked = append(acked, id)
			continue
		}
		if ext["code"] != incidentlib.ESTORAGEFULL || status != http.StatusServiceUnavailable || hdr.Get("Retry-After") == "" {
			t.Fatalf("write %d on a full disk: status %d Retry-After %q %s (%s)", i, status, hdr.Get("Retry-After"), out["raw"], msg)
		}
		// Nothing of it was written.
		_, _, got := gql(t, p.base, "", `query($id: ID!) { incident(id: $id) { id } }`, map[string]any{"id": id})
		if d, _ := got["data"].(map[string]any); d == nil || d["incident"] != nil {
			t.Fatalf("the refused write is there: %s", got["raw"])
		}
		full = true
		break
	}
	if !full {
		t.Fatalf("400 writes of 20 KB fitted under a limit of %d bytes", fi.Size())
	}
	if _, metrics := get(t, p.base+"/metrics"); !strings.Contains(metrics, "incidentlib_store_full_errors_total 1") {
		t.Errorf("/metrics does not count the refused write")
	}
	logs := p.stderr.String()
	if !strings.Contains(logs, `"level":"WARN","msg":"STORAGE_FULL`) {
		t.Errorf("the log of a full disk: want a warning:\n%s", logs)
	}
	for _, l := range strings.Split(logs, "\n") {
		if strings.Contains(l, `"level":"ERROR"`) && !strings.Contains(l, `"msg":"request"`) {
			t.Errorf("a full disk is logged as an internal error: %s", l)
		}
	}
	noStack(t, "serve", p.stderr.String())
	p.kill(t)

	// A restart on a disk with no room for the search index: it serves
	// from memory.
	limit = []string{prlimit, "--fsize=65536", "--"}
	p = startServeUnder(t, limit, bin, path)
	_, _, out := gql(t, p.base, "", `query($q: String!) { search(query: $q, first: 5) { totalCount } }`, map[string]any{"q": "xylophonia"})
	if d, _ := out["data"].(map[string]any); d == nil {
		t.Fatalf("search after a restart on a full disk: %s", out["raw"])
	} else if n, _ := d["search"].(map[string]any)["totalCount"].(float64); int(n) != len(acked) {
		t.Errorf("search finds %v of the %d acknowledged writes", n, len(acked))
	}
	if _, metrics := get(t, p.base+"/metrics"); !strings.Contains(metrics, "incidentlib_search_index_save_failures_total 1") {
		t.Errorf("/metrics does not count the failed save of the search index")
	}
	if logs := p.stderr.String(); !strings.Contains(logs, "could not be saved") {
		t.Errorf("no warning for the search index that could not be saved:\n%s", logs)
	}
	p.kill(t)

	// Everything acknowledged is there, and the store checks clean.
	stdout, stderr, code := runBin(t, bin, "export", "--db", path)
	if code != 0 {
		t.Fatalf("export: %d %s", code, stderr)
	}
	if n := strings.Count(stdout, "\n"); n != len(incs)+len(acked) {
		t.Errorf("export holds %d records, want %d", n, len(incs)+len(acked))
	}
	for _, id := range acked {
		if !strings.Contains(stdout, `"id":"`+id+`"`) {
			t.Errorf("acknowledged %s is missing", id)
		}
	}
	stdout, stderr, code = runBin(t, bin, "check", "--db", path)
	if code != 0 || !strings.Contains(stdout, "check: ok") {
		t.Errorf("check after a full disk: exit %d\n%s%s", code, stdout, stderr)
	}
}
