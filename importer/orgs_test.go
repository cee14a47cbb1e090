package importer

import (
	"testing"

	"github.com/incidentlib/incidentlib"
)

func TestOrgAliasesTable(t *testing.T) {
	a := DefaultOrgAliases()
	if len(a.Notes) == 0 {
		t.Error("the table has no notes on how it was decided")
	}
	for _, o := range a.Orgs {
		if !incidentlib.ValidSlug(o.Slug) {
			t.Errorf("bad slug %q", o.Slug)
		}
		// Every spelling resolves to its own organization.
		for _, s := range append([]string{o.Name}, o.Aliases...) {
			if _, slug := a.Resolve(s); slug != o.Slug {
				t.Errorf("Resolve(%q) = %q, want %q", s, slug, o.Slug)
			}
		}
		for _, d := range o.Domains {
			if _, slug, known := a.LookupDomain(d); !known || slug != o.Slug {
				t.Errorf("LookupDomain(%q) = %q, want %q", d, slug, o.Slug)
			}
		}
	}
}

func TestOrgAliasesResolve(t *testing.T) {
	a := DefaultOrgAliases()
	cases := []struct{ in, display, slug string }{
		// Decisions documented in org_aliases.json.
		{"Google", "Google", "google"},
		{"Google Cloud", "Google", "google"},
		{"google", "Google", "google"},
		{"GCP", "Google", "google"},
		{"Amazon", "Amazon", "amazon"},
		{"AWS", "Amazon", "amazon"},
		{"Amazon Web Services", "Amazon", "amazon"},
		{"Azure", "Microsoft", "microsoft"},
		{"Firefox", "Mozilla", "mozilla"},
		{"Stack Overflow", "Stack Exchange", "stack-exchange"},
		// Spellings of the datasets.
		{"Github", "GitHub", "github"},
		{"Gitlab", "GitLab", "gitlab"},
		{"TravisCI", "Travis CI", "travis-ci"},
		{"Travis CI", "Travis CI", "travis-ci"},
		{"DataDog", "Datadog", "datadog"},
		{"Pagerduty", "PagerDuty", "pagerduty"},
		{"Launchdarkly", "LaunchDarkly", "launchdarkly"},
		{`"Allegro"`, "Allegro", "allegro"},
		{"  stack   exchange ", "Stack Exchange", "stack-exchange"},
		{"rust-lang", "The Rust Project", "rust-lang"},
		{"WebKit code repository", "WebKit", "webkit"},
		{"dfds", "DFDS", "dfds"},
		// Domains and URLs.
		{"blog.cloudflare.com", "Cloudflare", "cloudflare"},
		{"https://aws.amazon.com/message/65648", "Amazon", "amazon"},
		{"http://techblog.netflix.com/2012/10/x.html", "Netflix", "netflix"},
		// Not in the table: the spelling as it is.
		{"Platform.sh", "Platform.sh", "platform-sh"},
		{"King's College London", "King's College London", "kings-college-london"},
		{"AT&T", "AT&T", "att"},
		{"Centers for Medicare & Medicaid Services (CMS)", "Centers for Medicare & Medicaid Services (CMS)", "centers-for-medicare-and-medicaid-services-cms"},
		{"https://www.unknown.test/x", "unknown.test", "unknown-test"},
		{"", "", ""},
	}
	for _, c := range cases {
		d, s := a.Resolve(c.in)
		if d != c.display || s != c.slug {
			t.Errorf("Resolve(%q) = %q, %q; want %q, %q", c.in, d, s, c.display, c.slug)
		}
	}
	// A shared hosting domain is not its host's organization.
	if _, slug, known := a.LookupDomain("someone.github.io"); known || slug != "someone-github-io" {
		t.Errorf("someone.github.io resolved to %q (known %v)", slug, known)
	}
	if _, slug, _ := a.LookupDomain("theonion.github.io"); slug != "the-onion" {
		t.Errorf("theonion.github.io = %q", slug)
	}
	// A nil table resolves nothing but still slugifies.
	var none *OrgAliases
	if d, s := none.Resolve("Google Cloud"); d != "Google Cloud" || s != "google-cloud" {
		t.Errorf("nil table: %q %q", d, s)
	}
}

func TestLoadOrgAliasesErrors(t *testing.T) {
	for name, data := range map[string]string{
		"malformed":        `{"orgs": [`,
		"bad slug":         `{"orgs": [{"slug": "Not A Slug", "name": "X"}]}`,
		"duplicate slug":   `{"orgs": [{"slug": "a", "name": "A"}, {"slug": "a", "name": "B"}]}`,
		"alias twice":      `{"orgs": [{"slug": "a", "name": "A", "aliases": ["Same"]}, {"slug": "b", "name": "B", "aliases": ["same"]}]}`,
		"domain twice":     `{"orgs": [{"slug": "a", "name": "A", "domains": ["x.test"]}, {"slug": "b", "name": "B", "domains": ["X.test"]}]}`,
		"not a domain":     `{"orgs": [{"slug": "a", "name": "A", "domains": ["localhost"]}]}`,
		"no name":          `{"orgs": [{"slug": "a", "name": " "}]}`,
		"unknown member":   `{"orgs": [{"slug": "a", "name": "A", "alias": ["x"]}]}`,
		"duplicate member": `{"orgs": [{"slug": "a", "slug": "b", "name": "A"}]}`,
		"bad notes":        `{"notes": 3, "orgs": []}`,
	} {
		if _, err := LoadOrgAliases([]byte(data)); incidentlib.ErrorCode(err) != incidentlib.EINVALID {
			t.Errorf("%s: err = %v, want EINVALID", name, err)
		}
	}
	a, err := LoadOrgAliases([]byte(`{"notes": "one note", "orgs": [{"slug": "a", "name": "A Co", "aliases": ["ACo"], "domains": ["a.test"]}]}`))
	if err != nil || len(a.Notes) != 1 {
		t.Fatalf("err %v", err)
	}
	if d, s := a.Resolve("aco"); d != "A Co" || s != "a" {
		t.Errorf("%q %q", d, s)
	}
}

func TestSlugify(t *testing.T) {
	for in, want := range map[string]string{
		"GitHub":                          "github",
		"incident.io":                     "incident-io",
		"Roscosmos / GLONASS":             "roscosmos-glonass",
		"U.S.-Canada Power System Outage": "u-s-canada-power-system-outage",
		"Zürich Café":                     "zurich-cafe",
		"Allegro.pl ":                     "allegro-pl",
		"--x--":                           "x",
		"":                                "",
	} {
		if got := Slugify(in); got != want {
			t.Errorf("Slugify(%q) = %q, want %q", in, got, want)
		}
	}
	// Names with nothing to keep still get a stable valid slug.
	s := Slugify("카카오페이지")
	if !incidentlib.ValidSlug(s) || s != Slugify("카카오페이지") || s == Slugify("카카오") {
		t.Errorf("Hangul slug %q", s)
	}
	long := Slugify("word " + string(make([]byte, 0)) + "aaaaaaaaaa bbbbbbbbbb cccccccccc dddddddddd eeeeeeeeee ffffffffff gggggggggg hhhhhhhhhh iiiiiiiiii jjjjjjjjjj")
	if !incidentlib.ValidSlug(long) || len(long) > 100 {
		t.Errorf("long slug %q (%d)", long, len(long))
	}
}
