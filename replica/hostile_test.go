package replica_test

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/incidentlib/incidentlib"
	"github.com/incidentlib/incidentlib/changefeed"
	"github.com/incidentlib/incidentlib/outbound"
	"github.com/incidentlib/incidentlib/replica"
	"github.com/incidentlib/incidentlib/storage"
)

// feedServer is a hostile primary: it serves a change feed made of the
// lines it is given, honouring since and limit, with the Incidentlib-Seq
// header of its last line.
type feedServer struct {
	mu    sync.Mutex
	lines [][]byte // one per change, seq = index + 1
	tax   [][]byte // the taxonomy feed's lines, entry n = index + 1
}

func (s *feedServer) add(tb testing.TB, inc *incidentlib.Incident) {
	tb.Helper()
	s.mu.Lock()
	defer s.mu.Unlock()
	var buf bytes.Buffer
	bw := bufio.NewWriter(&buf)
	if err := changefeed.WriteChangeLine(bw, uint64(len(s.lines)+1), false, inc.ID, inc); err != nil {
		tb.Fatal(err)
	}
	bw.Flush()
	s.lines = append(s.lines, buf.Bytes())
}

// addRaw adds a line whose record is the given JSON members.
func (s *feedServer) addRaw(members string) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.lines = append(s.lines, []byte(`{"seq":`+strconv.Itoa(len(s.lines)+1)+`,"deleted":false,`+members+"}\n"))
}

func (s *feedServer) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	since, _ := strconv.Atoi(r.URL.Query().Get("since"))
	limit, _ := strconv.Atoi(r.URL.Query().Get("limit"))
	s.mu.Lock()
	lines, tax := s.lines, s.tax
	s.mu.Unlock()
	if r.URL.Path == "/api/v1/taxonomy/changes" {
		after, _ := strconv.Atoi(r.URL.Query().Get("after"))
		w.Header().Set("Incidentlib-Seq", strconv.Itoa(len(lines)))
		for i := after; i < len(tax) && i < after+limit; i++ {
			_, _ = w.Write(tax[i])
		}
		return
	}
	if since > len(lines) {
		http.Error(w, "since above the sequence", http.StatusConflict)
		return
	}
	w.Header().Set("Incidentlib-Seq", strconv.Itoa(len(lines)))
	for i := since; i < len(lines) && i < since+limit; i++ {
		_, _ = w.Write(lines[i])
	}
}

func hostileRecord(id string, set func(*incidentlib.Incident)) *incidentlib.Incident {
	inc := &incidentlib.Incident{ID: id, Org: "Acme", OrgSlug: "acme", Title: incidentlib.Text{En: "Record " + id},
		Sources: []incidentlib.Source{{URL: "https://acme.example/" + id}}, UpdatedAt: "2026-01-01T00:00:00Z"}
	if set != nil {
		set(inc)
	}
	return inc
}

func skippedBy(tb testing.TB, f *follower) map[string]float64 {
	tb.Helper()
	mfs, err := f.reg.Gather()
	if err != nil {
		tb.Fatal(err)
	}
	out := map[string]float64{}
	for _, mf := range mfs {
		if mf.GetName() == "incidentlib_follow_records_skipped_total" {
			for _, m := range mf.GetMetric() {
				out[m.GetLabel()[0].GetValue()] = m.GetCounter().GetValue()
			}
		}
	}
	return out
}

// A primary that serves records a write would refuse (javascript: URLs,
// a 5,000-character title, 2026-02-30, slug ../../x, self-links, a record
// that does not decode, a 1 MB record over the record limit and over the
// response limit) does not stop a replica: each is skipped, counted by
// rule and left out of the store; the good records around them are
// applied, one that breaks only the text rule (stored before it) too, and
// the replica goes on following.
func TestFollowerSkipsHostileRecords(t *testing.T) {
	goroutineGuard(t)
	fs := &feedServer{}
	fs.add(t, hostileRecord("IL-0001", nil))
	fs.add(t, hostileRecord("IL-0002", func(i *incidentlib.Incident) { i.Sources[0].URL = "javascript:alert(document.cookie)" }))
	fs.add(t, hostileRecord("IL-0003", func(i *incidentlib.Incident) { i.Title.En = strings.Repeat("x", 5000) }))
	fs.add(t, hostileRecord("IL-0004", func(i *incidentlib.Incident) { i.Date = "2026-02-30" }))
	fs.add(t, hostileRecord("IL-0005", func(i *incidentlib.Incident) { i.OrgSlug = "../../x" }))
	fs.add(t, hostileRecord("IL-0006", func(i *incidentlib.Incident) { i.Related = []string{"IL-0006"} }))
	fs.addRaw(`"id":"IL-0007","org":"Acme","org_slug":"acme","title":5`)
	fs.add(t, hostileRecord("IL-0008", func(i *incidentlib.Incident) {
		i.Extra = incidentlib.Extra{"blob": json.RawMessage(`"` + strings.Repeat("x", 1<<20) + `"`)}
	}))
	fs.add(t, hostileRecord("IL-0009", func(i *incidentlib.Incident) { i.Title.En = "a bell\a and an \u202Eoverride" }))
	fs.add(t, hostileRecord("IL-0010", nil))
	ts := httptest.NewServer(fs)
	t.Cleanup(ts.Close)

	db := openStore(t, filepath.Join(t.TempDir(), "replica.db"))
	t.Cleanup(func() { db.Close() })
	cfg := testClientConfig()
	cfg.MaxResponseBytes = 512 << 10 // the 1 MB line is over the response limit too
	f := startFollowerWith(t, db, ts.URL, cfg, func(c *replica.Config) { c.Wait = 0 })
	f.waitSeq(t, 10)

	ctx := context.Background()
	var ids []string
	for n := 1; n <= 10; n++ {
		ids = append(ids, incidentlib.FormatID(uint32(n)))
	}
	incs, err := db.Incidents().FindIncidentsByIDs(ctx, ids)
	if err != nil {
		t.Fatal(err)
	}
	for k, inc := range incs {
		want := k == 0 || k == 8 || k == 9
		if (inc != nil) != want {
			t.Errorf("%s stored: %v, want %v", ids[k], inc != nil, want)
		}
	}
	if got := skippedBy(t, f); got["url_scheme"] != 1 || got["structure"] != 5 || got["size"] != 1 {
		t.Fatalf("skipped by rule %v, want url_scheme 1, structure 5, size 1", got)
	}
	if st := f.Status(); st.Skipped != 7 || st.Seq != 10 {
		t.Fatalf("status %+v", st)
	}
	problems, err := db.Maintenance().Check(ctx)
	if err != nil || len(problems) > 0 {
		t.Fatalf("check of the replica: %v %v", err, problems)
	}

	// It goes on following.
	fs.add(t, hostileRecord("IL-0011", nil))
	f.waitSeq(t, 11)
	if incs, _ := db.Incidents().FindIncidentsByIDs(ctx, []string{"IL-0011"}); incs[0] == nil {
		t.Fatal("a later good record was not applied")
	}
}

// A primary that answers a change whose seq (2^64-1) is above the page's
// own Incidentlib-Seq gets the page refused, whole: the replica's position
// never passes the primary's sequence, so once the primary behaves the
// replica follows it again (it is not stuck on a 409 for good).
func TestFollowerRefusesAChangeAboveThePagesSeq(t *testing.T) {
	goroutineGuard(t)
	p := newPrimary(t, 50)
	var hostile atomic.Bool
	var lies atomic.Int64
	hostile.Store(true)
	ts := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if !hostile.Load() {
			p.srv.ServeHTTP(w, r)
			return
		}
		rec := httptest.NewRecorder()
		p.srv.ServeHTTP(rec, r)
		for k, v := range rec.Header() {
			w.Header()[k] = v
		}
		w.WriteHeader(rec.Code)
		_, _ = w.Write(rec.Body.Bytes())
		_, _ = w.Write([]byte(`{"seq":18446744073709551615,"deleted":true,"id":"IL-0001"}` + "\n"))
		lies.Add(1)
	}))
	t.Cleanup(ts.Close)
	db := openStore(t, filepath.Join(t.TempDir(), "replica.db"))
	t.Cleanup(func() { db.Close() })
	f := startFollower(t, db, ts.URL, func(c *replica.Config) { c.Wait = 0 })
	for i := 0; lies.Load() < 3; i++ {
		if i > 6000 {
			t.Fatal("the follower did not come back to the hostile primary")
		}
		time.Sleep(10 * time.Millisecond)
	}
	hostile.Store(false)
	if pos, _, _ := db.Incidents().AppliedSeq(context.Background()); pos > p.db.Incidents().Seq() {
		t.Fatalf("the replica applied a change above the primary's sequence: position %d, primary %d", pos, p.db.Incidents().Seq())
	}
	if got := f.metric(t, "incidentlib_follow_errors_total"); got == 0 {
		t.Fatal("the refused pages were not counted as errors")
	}
	f.waitSeq(t, p.db.Incidents().Seq())
	sameLibrary(t, p.db, db)
	// And it follows later writes.
	e := *getInc(t, p.db, "IL-0002")
	e.Title.En = "Edited after the hostile pages"
	e.Review.ReviewedAt, e.Review.ReviewedBy = "", ""
	if _, err := p.db.Incidents().UpsertIncident(context.Background(), &e, incidentlib.WriteOptions{}); err != nil {
		t.Fatal(err)
	}
	f.waitSeq(t, p.db.Incidents().Seq())
	sameLibrary(t, p.db, db)
}

// fakeClock is a clock the test moves by hand.
type fakeClock struct {
	mu sync.Mutex
	t  time.Time
}

func (c *fakeClock) Now() time.Time {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.t
}

func (c *fakeClock) Add(d time.Duration) {
	c.mu.Lock()
	c.t = c.t.Add(d)
	c.mu.Unlock()
}

// The lag counts the time of a poll stuck on a primary that trickles its
// answer: the replica is not level while the change it has begun to
// receive is not applied. The clock is the test's.
func TestFollowerLagCountsAStuckPoll(t *testing.T) {
	goroutineGuard(t)
	p := newPrimary(t, 5)
	var trickle atomic.Bool
	sent := make(chan struct{}, 1)
	release := make(chan struct{})
	ts := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		rec := httptest.NewRecorder()
		p.srv.ServeHTTP(rec, r)
		for k, v := range rec.Header() {
			w.Header()[k] = v
		}
		w.WriteHeader(rec.Code)
		body := rec.Body.Bytes()
		if !trickle.Load() || len(body) == 0 {
			_, _ = w.Write(body)
			return
		}
		// A few bytes, then nothing until the test lets go.
		_, _ = w.Write(body[:10])
		w.(http.Flusher).Flush()
		select {
		case sent <- struct{}{}:
		default:
		}
		select {
		case <-release:
			_, _ = w.Write(body[10:])
		case <-r.Context().Done():
		}
	}))
	t.Cleanup(ts.Close)
	t.Cleanup(func() { close(release) })
	clock := &fakeClock{t: time.Date(2026, 12, 1, 12, 0, 0, 0, time.UTC)}
	db := openStore(t, filepath.Join(t.TempDir(), "replica.db"))
	t.Cleanup(func() { db.Close() })
	f := startFollower(t, db, ts.URL, func(c *replica.Config) { c.Wait, c.Now = 0, clock.Now })
	f.waitSeq(t, p.db.Incidents().Seq())
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	if err := f.WaitLevel(ctx); err != nil {
		t.Fatal(err)
	}
	if got := f.metric(t, "incidentlib_follow_lag_seconds"); got != 0 {
		t.Fatalf("lag %v while level", got)
	}

	trickle.Store(true)
	e := *getInc(t, p.db, "IL-0003")
	e.Title.En = "A change the primary trickles"
	e.Review.ReviewedAt, e.Review.ReviewedBy = "", ""
	if _, err := p.db.Incidents().UpsertIncident(context.Background(), &e, incidentlib.WriteOptions{}); err != nil {
		t.Fatal(err)
	}
	select {
	case <-sent:
	case <-ctx.Done():
		t.Fatal("the follower did not ask for the change")
	}
	for i := 0; !f.Status().Receiving; i++ {
		if i > 6000 {
			t.Fatal("the follower did not receive the first bytes")
		}
		time.Sleep(10 * time.Millisecond)
	}
	clock.Add(2 * time.Minute)
	if got := f.metric(t, "incidentlib_follow_lag_seconds"); got < 120 {
		t.Fatalf("lag %v s after two minutes stuck in a trickled poll, want at least 120", got)
	}
	if got := replica.Lag(f.Status(), clock.Now()); got < 120 {
		t.Fatalf("Lag %v", got)
	}
}

func getInc(tb testing.TB, db *storage.DB, id string) *incidentlib.Incident {
	tb.Helper()
	incs, err := db.Incidents().FindIncidentsByIDs(context.Background(), []string{id})
	if err != nil || incs[0] == nil {
		tb.Fatalf("%s: %v", id, err)
	}
	return incs[0]
}

func startFollowerWith(tb testing.TB, db *storage.DB, url string, ccfg outbound.Config, tweak func(*replica.Config)) *follower {
	tb.Helper()
	return startFollowerClient(tb, db, url, ccfg, tweak)
}
