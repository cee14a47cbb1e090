package main

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"

	"github.com/incidentlib/incidentlib/server"
)

func init() {
	register("instr", "instructions per list page and incident page request, counted by valgrind (callgrind): the same on a busy machine", runInstr)
}

// instrChildEnv carries the child's settings (JSON of instrChild) when
// the harness runs itself under valgrind.
const instrChildEnv = "INCIDENTLIB_INSTR_CHILD"

// instrChild is what one run under valgrind serves: requests requests of
// body to the server over the store at db, after warm unmeasured ones.
type instrChild struct {
	DB       string `json:"db"`
	Count    int    `json:"count"`
	Body     []byte `json:"body"`
	Warm     int    `json:"warm"`
	Requests int    `json:"requests"`
}

// runInstr counts, with valgrind's callgrind, the instructions the whole
// process executes for a list page and an incident page: each is served
// in-process (the server's handler, no sockets) n times and 0 times after
// the same warm-up, and the difference divided by n is the count per
// request. The collector's work is in it (one P, the serve default budget).
// Instructions are not time (cache misses and branches are not in them), but
// they do not move when the machine is busy, so a change of a few percent
// shows: the timed benchmarks on this shared machine vary by 20-40%.
func runInstr(ctx context.Context, args []string, stdout io.Writer) error {
	if spec := os.Getenv(instrChildEnv); spec != "" {
		return serveInstrChild(ctx, spec)
	}
	fs := flagSet("instr", stdout)
	count := fs.Int("count", 10_000, "generated incidents in the store (at least 100)")
	seed := fs.Int64("seed", 1, "generator seed")
	first := fs.Int("first", 20, "page size of the list page, 1 to 100")
	requests := fs.Int("requests", 1000, "measured requests per query (at least 10)")
	gcPercent := fs.Int("gc-percent", server.DefaultGCPercent, "garbage collector budget in percent of the live heap, as serve --gc-percent")
	keep := fs.String("keep", "", "keep callgrind's output files in this directory (list.N, list.0, incident.N, incident.0): callgrind_annotate FILE shows where the instructions go")
	if err := fs.Parse(args); err != nil {
		return err
	}
	switch {
	case *count < 100:
		return fmt.Errorf("instr: -count %d: at least 100 incidents", *count)
	case *first < 1 || *first > 100:
		return fmt.Errorf("instr: -first %d: a page size from 1 to 100", *first)
	case *requests < 10:
		return fmt.Errorf("instr: -requests %d: at least 10", *requests)
	case *gcPercent < 25:
		return fmt.Errorf("instr: -gc-percent %d: at least 25", *gcPercent)
	}
	valgrind, err := exec.LookPath("valgrind")
	if err != nil {
		const missing = "instr: valgrind is not installed (Debian: apt-get install valgrind)"
		if args == nil { // every benchmark in turn (make bench): go on without it
			fmt.Fprintln(stdout, missing+"; skipped")
			return nil
		}
		return errors.New(missing)
	}
	self, err := os.Executable()
	if err != nil {
		return err
	}
	dir, err := os.MkdirTemp("", "incidentlib-instr-")
	if err != nil {
		return err
	}
	defer os.RemoveAll(dir)
	path := filepath.Join(dir, "bench.db")
	fmt.Fprintf(stdout, "instr: generating and importing %d incidents (seed %d)\n", *count, *seed)
	db, corpus, err := streamGenerated(ctx, path, *count, *seed) // streamcorpus.go
	if err != nil {
		return err
	}
	if err := db.Close(); err != nil {
		return err
	}
	listBody, _ := json.Marshal(map[string]any{"query": ListPageQuery, "variables": map[string]any{"first": *first}})
	pageBody, _ := json.Marshal(map[string]any{"query": IncidentPageQuery, "variables": map[string]any{"id": corpus.rich}})
	fmt.Fprintf(stdout, "instr: %s, GOMAXPROCS=1, gc-percent %d, %d requests per query (eight runs, a few minutes in all)\n", valgrind, *gcPercent, *requests)
	outDir := dir
	if *keep != "" {
		if err := os.MkdirAll(*keep, 0o755); err != nil {
			return err
		}
		outDir = *keep
	}
	for _, q := range []struct {
		name, file string
		body       []byte
	}{
		{fmt.Sprintf("list page (first: %d)", *first), "list", listBody}, {"incident page", "incident", pageBody},
		// The filtered list pages of the graphql benchmark (filtered.go),
		// with one of their date ranges: every range costs the same.
		{"list page, date range", "date", dateRangeBodies(*first, "")[0]},
		{"list page, date+symptom", "date-symptom", dateRangeBodies(*first, corpus.symptom)[0]},
	} {
		var total [2]uint64
		for i, n := range []int{*requests, 0} {
			spec, _ := json.Marshal(instrChild{DB: path, Count: *count, Body: q.body, Warm: 20, Requests: n})
			out := filepath.Join(outDir, fmt.Sprintf("%s.%d", q.file, n))
			cmd := exec.CommandContext(ctx, valgrind, "--tool=callgrind", "--callgrind-out-file="+out, self, "instr")
			cmd.Env = append(os.Environ(), instrChildEnv+"="+string(spec), "GOMAXPROCS=1",
				"GOGC="+strconv.Itoa(*gcPercent), "GODEBUG=asyncpreemptoff=1")
			var stderr bytes.Buffer
			cmd.Stderr = &stderr
			if err := cmd.Run(); err != nil {
				return fmt.Errorf("instr: valgrind: %v\n%s", err, lastLines(stderr.String(), 20))
			}
			if total[i], err = callgrindTotal(out); err != nil {
				return err
			}
		}
		if total[0] <= total[1] {
			return fmt.Errorf("instr: %s: %d instructions with the requests, %d without", q.name, total[0], total[1])
		}
		fmt.Fprintf(stdout, "%-24s %9.0f instructions/request (%d requests: %d; none: %d)\n",
			q.name, float64(total[0]-total[1])/float64(*requests), *requests, total[0], total[1])
	}
	return nil
}

// serveInstrChild is the process valgrind runs: it opens the store, serves
// the warm-up and the measured requests, and exits.
func serveInstrChild(ctx context.Context, spec string) error {
	var c instrChild
	if err := json.Unmarshal([]byte(spec), &c); err != nil {
		return fmt.Errorf("instr child: %s: %w", instrChildEnv, err)
	}
	db, _, err := openStore(c.DB, c.Count)
	if err != nil {
		return err
	}
	defer db.Close()
	srv, err := newServer(db, nil, executionConfig, nil)
	if err != nil {
		return err
	}
	for i := range c.Warm + c.Requests {
		req := httptest.NewRequestWithContext(ctx, http.MethodPost, "/graphql", bytes.NewReader(c.Body))
		req.Header.Set("Content-Type", "application/json")
		w := httptest.NewRecorder()
		srv.ServeHTTP(w, req)
		if w.Code != http.StatusOK || bytes.Contains(w.Body.Bytes(), []byte(`"errors"`)) {
			return fmt.Errorf("instr child: request %d: status %d: %.300s", i, w.Code, w.Body.Bytes())
		}
	}
	return nil
}

// callgrindTotal reads the instruction count of a callgrind output file
// (its "summary:" or "totals:" line).
func callgrindTotal(path string) (uint64, error) {
	f, err := os.Open(path)
	if err != nil {
		return 0, err
	}
	defer f.Close()
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		line := sc.Text()
		for _, p := range []string{"summary: ", "totals: "} {
			if rest, ok := strings.CutPrefix(line, p); ok {
				return strconv.ParseUint(strings.Fields(rest)[0], 10, 64)
			}
		}
	}
	if err := sc.Err(); err != nil {
		return 0, err
	}
	return 0, fmt.Errorf("%s: no summary line", path)
}

// lastLines is the last n lines of s.
func lastLines(s string, n int) string {
	lines := strings.Split(strings.TrimRight(s, "\n"), "\n")
	return strings.Join(lines[max(0, len(lines)-n):], "\n")
}
