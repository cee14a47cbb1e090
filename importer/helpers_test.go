package importer

import (
	"encoding/json"
	"os"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/incidentlib/incidentlib"
)

// fixedNow is the clock of the tests.
func fixedNow() time.Time { return time.Date(2026, 11, 30, 12, 0, 0, 0, time.UTC) }

// mustTaxonomy reads the test taxonomy.
func mustTaxonomy(tb testing.TB) *incidentlib.Taxonomy {
	tb.Helper()
	data, err := os.ReadFile("testdata/taxonomy.json")
	if err != nil {
		tb.Fatal(err)
	}
	tax, err := incidentlib.ParseTaxonomy(data)
	if err != nil {
		tb.Fatal(err)
	}
	return tax
}

// mustLoad loads paths with the test taxonomy and clock.
func mustLoad(tb testing.TB, opts Options, paths ...string) *Result {
	tb.Helper()
	if opts.Taxonomy == nil {
		opts.Taxonomy = mustTaxonomy(tb)
	}
	if opts.Now == nil {
		opts.Now = fixedNow
	}
	res, err := Load(paths, opts)
	if err != nil {
		tb.Fatal(err)
	}
	return res
}

// record returns the record with source key, failing the test without it.
func record(tb testing.TB, res *Result, key string) Record {
	tb.Helper()
	for _, r := range res.Records {
		if r.SourceKey == key {
			return r
		}
	}
	var keys []string
	for _, r := range res.Records {
		keys = append(keys, r.SourceKey)
	}
	tb.Fatalf("no record %q; have %q", key, keys)
	return Record{}
}

// problem returns the problem whose Where ends with suffix and whose reason
// contains text.
func problem(tb testing.TB, res *Result, whereSuffix, text string) Problem {
	tb.Helper()
	for _, p := range res.Problems {
		if strings.HasSuffix(p.Where, whereSuffix) && strings.Contains(p.Reason, text) {
			return p
		}
	}
	var all []string
	for _, p := range res.Problems {
		all = append(all, p.String())
	}
	tb.Fatalf("no problem at *%s containing %q; problems:\n%s", whereSuffix, text, strings.Join(all, "\n"))
	return Problem{}
}

// mustValidate checks that every record passes Validate once it has an id,
// and that it survives an IL-JSON round trip unchanged.
func mustValidate(tb testing.TB, recs []Record) {
	tb.Helper()
	for _, r := range recs {
		inc := *r.Incident
		if inc.ID == "" {
			// The id the store might give, unless the record links to it.
			inc.ID = incidentlib.FormatID(1)
			if inc.RecurrenceOf == inc.ID || slices.Contains(inc.Related, inc.ID) {
				inc.ID = incidentlib.FormatID(2)
			}
		}
		if err := inc.Validate(); err != nil {
			tb.Errorf("%s (%s): %v", r.SourceKey, r.Where, err)
			for _, e := range incidentlib.ErrorList(err) {
				tb.Logf("  %s", e.Message)
			}
			continue
		}
		b, err := json.Marshal(inc)
		if err != nil {
			tb.Errorf("%s: marshal: %v", r.SourceKey, err)
			continue
		}
		var back incidentlib.Incident
		if err := json.Unmarshal(b, &back); err != nil {
			tb.Errorf("%s: unmarshal: %v", r.SourceKey, err)
			continue
		}
		b2, _ := json.Marshal(back)
		if string(b) != string(b2) {
			tb.Errorf("%s: IL-JSON round trip changed the record:\n%s\n%s", r.SourceKey, b, b2)
		}
	}
}

// extra decodes a member of the record's Extra.
func extra(tb testing.TB, inc *incidentlib.Incident, name string, v any) {
	tb.Helper()
	raw, ok := inc.Extra[name]
	if !ok {
		tb.Fatalf("no extra %q; extra has %v", name, keysOf(inc.Extra))
	}
	if err := json.Unmarshal(raw, v); err != nil {
		tb.Fatalf("extra %q: %v", name, err)
	}
}

func keysOf(m incidentlib.Extra) []string {
	var out []string
	for k := range m {
		out = append(out, k)
	}
	return out
}

func equalStrings(a, b []string) bool {
	if len(a) != len(b) {
		return false
	}
	for i := range a {
		if a[i] != b[i] {
			return false
		}
	}
	return true
}
