package respcache_test

import (
	"bytes"
	"crypto/sha256"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/incidentlib/incidentlib/server/gqledge/respcache"
)

func entry(name string, seq uint64, body string) *respcache.Entry {
	e := &respcache.Entry{Key: respcache.Key(sha256.Sum256([]byte(name))), Seq: seq, Status: http.StatusOK,
		Header: http.Header{"Content-Type": {"application/json"}}, Body: []byte(body)}
	e.Measure()
	return e
}

func newCache(t *testing.T, max int64) (*respcache.Cache, *prometheus.Registry) {
	t.Helper()
	reg := prometheus.NewRegistry()
	c, err := respcache.New(max, reg)
	if err != nil {
		t.Fatal(err)
	}
	return c, reg
}

// TestCache: an entry is served only at the store sequence it was
// computed at (and not before bornAfter); a stale one is dropped when met;
// the bound in bytes evicts the least recently used; Put refuses an entry
// a write has already made stale or that alone exceeds the bound.
func TestCache(t *testing.T) {
	t.Run("HitAtItsSequence", func(t *testing.T) {
		c, _ := newCache(t, 1<<20)
		e := entry("a", 7, `{"data":1}`)
		c.Put(e, 7)
		if got, outcome := c.Get(e.Key, 7, 0); got != e || outcome != respcache.Hit {
			t.Fatalf("Get: %v %s", got, outcome)
		}
		if got := c.Peek(e.Key, 7, 0); got != e {
			t.Fatal("Peek missed a usable entry")
		}
	})
	t.Run("StaleDroppedWhenMet", func(t *testing.T) {
		c, reg := newCache(t, 1<<20)
		e := entry("a", 7, `{"data":1}`)
		c.Put(e, 7)
		if c.Peek(e.Key, 8, 0) != nil {
			t.Fatal("Peek served an entry of an older sequence")
		}
		if got, outcome := c.Get(e.Key, 8, 0); got != nil || outcome != respcache.Stale {
			t.Fatalf("Get at a newer sequence: %v %s", got, outcome)
		}
		if _, outcome := c.Get(e.Key, 7, 0); outcome != respcache.Miss {
			t.Fatalf("the stale entry was kept: %s", outcome)
		}
		if n := value(t, reg, "incidentlib_response_cache_entries"); n != 0 {
			t.Fatalf("%v entries", n)
		}
	})
	t.Run("BornAfter", func(t *testing.T) {
		c, _ := newCache(t, 1<<20)
		e := entry("a", 7, `{}`)
		e.Born = 100
		c.Put(e, 7)
		if got, outcome := c.Get(e.Key, 7, 101); got != nil || outcome != respcache.Stale {
			t.Fatalf("an entry older than bornAfter: %v %s", got, outcome)
		}
	})
	t.Run("PutRefusesStaleAndOversized", func(t *testing.T) {
		c, _ := newCache(t, 1024)
		e := entry("a", 7, `{}`)
		c.Put(e, 8)
		if _, outcome := c.Get(e.Key, 7, 0); outcome != respcache.Miss {
			t.Fatal("an entry made stale before Put was stored")
		}
		big := entry("b", 7, strings.Repeat("x", 2048))
		c.Put(big, 7)
		if _, outcome := c.Get(big.Key, 7, 0); outcome != respcache.Miss {
			t.Fatal("an entry over the bound was stored")
		}
	})
	t.Run("LeastRecentlyUsedEvicted", func(t *testing.T) {
		one := entry("x", 1, strings.Repeat("x", 300))
		c, reg := newCache(t, 3*one.Size-1) // room for two
		a, b, d := entry("a", 1, strings.Repeat("a", 300)), entry("b", 1, strings.Repeat("b", 300)), entry("d", 1, strings.Repeat("d", 300))
		c.Put(a, 1)
		c.Put(b, 1)
		c.Peek(a.Key, 1, 0) // a is now the most recently used
		c.Put(d, 1)
		if c.Peek(b.Key, 1, 0) != nil {
			t.Fatal("the least recently used entry was kept")
		}
		if c.Peek(a.Key, 1, 0) == nil || c.Peek(d.Key, 1, 0) == nil {
			t.Fatal("a recently used entry was evicted")
		}
		if got := value(t, reg, "incidentlib_response_cache_bytes"); got != float64(a.Size+d.Size) {
			t.Fatalf("%v bytes held, want %d", got, a.Size+d.Size)
		}
	})
	t.Run("Off", func(t *testing.T) {
		c, _ := newCache(t, 0)
		e := entry("a", 1, `{}`)
		c.Put(e, 1)
		if c.Enabled() || c.Peek(e.Key, 1, 0) != nil {
			t.Fatal("a cache of 0 bytes keeps entries")
		}
	})
}

// value reads the gauge name from reg.
func value(t *testing.T, reg *prometheus.Registry, name string) float64 {
	t.Helper()
	fams, err := reg.Gather()
	if err != nil {
		t.Fatal(err)
	}
	for _, f := range fams {
		if f.GetName() == name {
			return f.GetMetric()[0].GetGauge().GetValue()
		}
	}
	t.Fatalf("no %s registered", name)
	return 0
}

// TestHTTPCaching: a GET replay carries the ETag, Cache-Control and Vary,
// and If-None-Match naming the ETag (weakly, in a list, or *) is 304 with
// no body; a POST replay carries none of them.
func TestHTTPCaching(t *testing.T) {
	hc := respcache.NewHTTPCaching("no-cache")
	e := entry("a", 42, `{"data":{}}`)
	e.ETag = hc.ETag(e)
	e.ContentLength = []string{"11"}
	if !strings.HasPrefix(e.ETag, `"`) || !strings.Contains(e.ETag, "-16-") {
		t.Fatalf("ETag %s does not hold the sequence (42 in base 36)", e.ETag)
	}
	replay := func(method, inm string) *httptest.ResponseRecorder {
		r := httptest.NewRequest(method, "/graphql", nil)
		if inm != "" {
			r.Header.Set("If-None-Match", inm)
		}
		w := httptest.NewRecorder()
		hc.Replay(w, r, e, method == http.MethodGet)
		return w
	}
	w := replay(http.MethodGet, "")
	if w.Code != 200 || w.Header().Get("Etag") != e.ETag || w.Header().Get("Cache-Control") != "no-cache" || w.Header().Get("Vary") == "" || !bytes.Equal(w.Body.Bytes(), e.Body) {
		t.Fatalf("GET: %d %v %s", w.Code, w.Header(), w.Body.Bytes())
	}
	for _, inm := range []string{e.ETag, "W/" + e.ETag, `"other", ` + e.ETag, "*"} {
		if w := replay(http.MethodGet, inm); w.Code != http.StatusNotModified || w.Body.Len() != 0 || w.Header().Get("Content-Type") != "" {
			t.Errorf("If-None-Match %s: %d %q", inm, w.Code, w.Body.Bytes())
		}
	}
	if w := replay(http.MethodGet, `"other"`); w.Code != 200 {
		t.Errorf("another ETag: %d", w.Code)
	}
	if w := replay(http.MethodPost, e.ETag); w.Code != 200 || w.Header().Get("Etag") != "" || w.Header().Get("Cache-Control") != "" {
		t.Errorf("POST: %d %v", w.Code, w.Header())
	}
	if other := respcache.NewHTTPCaching("no-cache").ETag(e); other == e.ETag {
		t.Error("two processes draw the same ETag epoch")
	}
}
