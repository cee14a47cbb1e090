package importer

import (
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/incidentlib/incidentlib"
)

// fuzzTaxonomy is shared by the fuzz targets.
var fuzzTaxonomy *incidentlib.Taxonomy

// fuzzLoad parses data as a file of format without touching the file
// system, and checks what every parser promises: no panic, every record
// valid once it has an id and unchanged by an IL-JSON round trip, every
// problem and record naming the file.
func fuzzLoad(t *testing.T, format Format, name string, data []byte) *Result {
	if fuzzTaxonomy == nil {
		fuzzTaxonomy = mustTaxonomy(t)
	}
	l := newLoader(Options{Format: format, Taxonomy: fuzzTaxonomy, Now: fixedNow})
	dir := "fuzz/" + string(format)
	l.colls[dir] = &collection{Name: "fuzz", Repo: "github.com/example/fuzz", Commit: strings.Repeat("a", 40), Root: dir, Licence: "MIT"}
	path := dir + "/" + name
	res := &Result{Format: map[string]Format{}}
	l.loadFile(res, path, data)
	for _, p := range res.Problems {
		if !strings.HasPrefix(p.Where, path) || p.Reason == "" {
			t.Fatalf("problem without file or reason: %+v", p)
		}
	}
	mustValidate(t, res.Records)
	for _, r := range res.Records {
		if !strings.HasPrefix(r.Where, path) || !strings.HasPrefix(r.SourceKey, "fuzz/") {
			t.Fatalf("record where %q key %q", r.Where, r.SourceKey)
		}
		if format != FormatILJSON && format != FormatJSONL {
			if r.Incident.ID != "" || r.Incident.Review.WrittenBy != "import" || r.Incident.Title.En == "" {
				t.Fatalf("record %q: id %q review %+v title %q", r.SourceKey, r.Incident.ID, r.Incident.Review, r.Incident.Title.En)
			}
			if err := r.Incident.ValidateTerms(fuzzTaxonomy); err != nil {
				t.Fatalf("record %q: %v", r.SourceKey, err)
			}
		}
	}
	return res
}

// addFiles adds the fixture files matching pattern to the seed corpus.
func addFiles(f *testing.F, patterns ...string) {
	for _, pattern := range patterns {
		files, err := filepath.Glob(pattern)
		if err != nil {
			f.Fatal(err)
		}
		for _, file := range files {
			data, err := os.ReadFile(file)
			if err != nil {
				f.Fatal(err)
			}
			f.Add(data)
		}
	}
}

func FuzzILJSON(f *testing.F) {
	addFiles(f, "testdata/iljson/*/*")
	f.Add([]byte(`{"id":"IL-0001","org":"A","org_slug":"a","title":{"en":"t"},"related":["IL-0001"]}`))
	f.Add([]byte(`[{"org":"A","org_slug":"a","title":{"EN":"t"}}]`))
	f.Fuzz(func(t *testing.T, data []byte) {
		fuzzLoad(t, FormatILJSON, "records.json", data)
		fuzzLoad(t, FormatJSONL, "records.jsonl", data)
	})
}

func FuzzFrontmatter(f *testing.F) {
	addFiles(f, "testdata/icco/data/*.md", "testdata/icco-broken/*.md")
	f.Add([]byte("---\ntitle: &a x\ncompany: *a\nkeywords: [*a]\n---\n"))
	f.Add([]byte("---\nuuid: u\ncompany: A\nstart_time: 0001-01-01T00:00:00Z\nend_time: 9999-12-31T23:59:59Z\n---\n"))
	f.Fuzz(func(t *testing.T, data []byte) {
		fuzzLoad(t, FormatFrontmatterMD, "u.md", data)
	})
}

func FuzzSectioned(f *testing.F) {
	addFiles(f, "testdata/dfds/PM*", "testdata/dfds-broken/PM*")
	f.Add([]byte("# T\n## Stats\n- Time to recovery: 99999999 days\n- Category: a, b\n"))
	f.Fuzz(func(t *testing.T, data []byte) {
		fuzzLoad(t, FormatSectionedMD, "PM2021-001 - Fuzz.md", data)
	})
}

func FuzzJSONList(f *testing.F) {
	addFiles(f, "testdata/macintux/*.json", "testdata/macintux-broken/*.json")
	f.Add([]byte(`[{"url":"https://a.test/","domain":"","keywords":"x y"}]`))
	f.Fuzz(func(t *testing.T, data []byte) {
		fuzzLoad(t, FormatJSONList, "list.json", data)
	})
}

func FuzzLinkList(f *testing.F) {
	addFiles(f, "testdata/linklist/*.md", "testdata/linklist-broken/*.md")
	f.Add([]byte("## H\n- [](https://a.test). \n- [A](https://a.test/x) [b](https://b.test) [c](ftp://c)\n"))
	f.Fuzz(func(t *testing.T, data []byte) {
		fuzzLoad(t, FormatLinkListMD, "README.md", data)
	})
}

func FuzzDetect(f *testing.F) {
	addFiles(f, "testdata/*/*.md", "testdata/*/*.json", "testdata/iljson/*/*")
	f.Fuzz(func(t *testing.T, data []byte) {
		for _, name := range []string{"x.md", "x.json", "README.md", "x"} {
			format, skip := detect(name, data)
			if format != "" && skip != "" {
				t.Fatalf("%s: format %q and skip %q", name, format, skip)
			}
			if format != "" {
				fuzzLoad(t, format, name, data)
			}
		}
	})
}

func FuzzNormalizeURL(f *testing.F) {
	for _, s := range []string{"https://www.Example.com:443/a/?utm_source=x&b=1#frag", "http://[::1]:80/", "https://a.test/#!x", "https://u:p@a.test", "%zz", "https://a.test/%2F/"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, u string) {
		n := NormalizeURL(u)
		if again := NormalizeURL(n); again != n {
			t.Fatalf("not idempotent: %q -> %q -> %q", u, n, again)
		}
		// For absolute http URLs, http and https are the same.
		if strings.HasPrefix(n, "https://") && strings.HasPrefix(strings.ToLower(strings.TrimSpace(u)), "http://") {
			https := "https://" + strings.TrimSpace(u)[len("http://"):]
			if NormalizeURL(https) != n {
				t.Fatalf("http and https differ: %q %q", n, NormalizeURL(https))
			}
		}
	})
}

func FuzzSlugify(f *testing.F) {
	for _, s := range []string{"AT&T", "King's College", "카카오", "Zürich", "", "---"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		slug := Slugify(s)
		if strings.TrimSpace(s) == "" {
			if slug != "" {
				t.Fatalf("Slugify(%q) = %q", s, slug)
			}
			return
		}
		if !incidentlib.ValidSlug(slug) {
			t.Fatalf("Slugify(%q) = %q is not a slug", s, slug)
		}
		d, sl := DefaultOrgAliases().Resolve(s)
		if d != "" && !incidentlib.ValidSlug(sl) {
			t.Fatalf("Resolve(%q) = %q, %q", s, d, sl)
		}
		if d != "" {
			b, _ := json.Marshal(d)
			if len(b) == 0 {
				t.Fatal("unmarshalable name")
			}
		}
	})
}
