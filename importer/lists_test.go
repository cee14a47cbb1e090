package importer

import (
	"strings"
	"testing"
)

func TestJSONList(t *testing.T) {
	res := mustLoad(t, Options{}, "testdata/macintux")
	if len(res.Problems) != 0 {
		t.Fatalf("problems: %v", res.Problems)
	}
	if len(res.Records) != 4 {
		t.Fatalf("got %d records, want 4", len(res.Records))
	}
	mustValidate(t, res.Records)
	if f := res.Format["testdata/macintux/list-of-postmortems.json"]; f != FormatJSONList {
		t.Errorf("format %q", f)
	}

	t.Run("Entry", func(t *testing.T) {
		r := record(t, res, "macintux/https://github.com/blog/1364-downtime-last-saturday")
		inc := r.Incident
		if r.Where != "testdata/macintux/list-of-postmortems.json:2 [0]" {
			t.Errorf("where %q", r.Where)
		}
		if inc.Org != "GitHub" || inc.OrgSlug != "github" || inc.Date != "2012-12-22" || inc.DateKind != "incident" {
			t.Errorf("org %q %q date %q %q", inc.Org, inc.OrgSlug, inc.Date, inc.DateKind)
		}
		// The organization's own name is left out of the title.
		if inc.Title.En != "GitHub postmortem: network, upgrade (2012-12-22)" || !inc.Summary.IsZero() {
			t.Errorf("title %q summary %q", inc.Title.En, inc.Summary.En)
		}
		if !equalStrings(inc.Domain, []string{"networking"}) || !equalStrings(r.Unmapped, []string{"keywords=github", "keywords=upgrade"}) {
			t.Errorf("domain %v unmapped %v", inc.Domain, r.Unmapped)
		}
		var licence string
		extra(t, inc, "licence", &licence)
		if licence != "MIT" || inc.Sources[0].URL != "https://github.com/blog/1364-downtime-last-saturday" || inc.Review.WrittenBy != "import" {
			t.Errorf("licence %q sources %+v", licence, inc.Sources)
		}
	})
	t.Run("HashbangURLKept", func(t *testing.T) {
		r := record(t, res, "macintux/https://groups.google.com/forum?fromgroups=#!topic/google-appengine/p2QKJ0OSLc8")
		if r.Incident.OrgSlug != "google" || r.Incident.Title.En != "Google postmortem: app-engine (2010-02-24)" {
			t.Errorf("org %q title %q", r.Incident.OrgSlug, r.Incident.Title.En)
		}
	})
	t.Run("HostedOnGitHubPagesIsNotGitHub", func(t *testing.T) {
		r := record(t, res, "macintux/https://theonion.github.io/blog/2013/05/08/how-it-was-hacked")
		if r.Incident.Org != "The Onion" || r.Incident.OrgSlug != "the-onion" || r.OrgGuessed {
			t.Errorf("org %q %q", r.Incident.Org, r.Incident.OrgSlug)
		}
		if !equalStrings(r.Incident.Domain, []string{"security"}) {
			t.Errorf("domain %v", r.Incident.Domain)
		}
	})
	t.Run("UnknownDomainAndKeywordString", func(t *testing.T) {
		r := record(t, res, "macintux/https://unknown-status.test/incidents/7")
		inc := r.Incident
		if inc.Org != "unknown-status.test" || inc.OrgSlug != "unknown-status-test" || !r.OrgGuessed {
			t.Errorf("org %q %q guessed %v", inc.Org, inc.OrgSlug, r.OrgGuessed)
		}
		if inc.Date != "" || inc.Title.En != "unknown-status.test postmortem: routing, dns" {
			t.Errorf("date %q title %q", inc.Date, inc.Title.En)
		}
		if !equalStrings(inc.Domain, []string{"networking"}) || !equalStrings(inc.Components, []string{"dns"}) {
			t.Errorf("domain %v components %v", inc.Domain, inc.Components)
		}
		if len(r.Warnings) != 1 || !strings.Contains(r.Warnings[0], `"comment"`) {
			t.Errorf("warnings %v", r.Warnings)
		}
	})
}

func TestJSONListBroken(t *testing.T) {
	res := mustLoad(t, Options{Format: FormatJSONList}, "testdata/macintux-broken")
	for _, p := range res.Problems {
		t.Log(p)
	}
	problem(t, res, "list.json:3 [1]", "url is required")
	problem(t, res, "list.json:4 [2]", `date "2012-02-30" is not a calendar date`)
	problem(t, res, "list.json:5 [3]", "not an absolute http(s) URL")
	problem(t, res, "list.json:6 [4]", `duplicate key "domain"`)
	problem(t, res, "list.json:7 [5]", "the same record as testdata/macintux-broken/list.json:2 [0]")
	problem(t, res, "truncated.json:3", "malformed JSON")
	if len(res.Records) != 2 || len(res.Problems) != 6 {
		t.Errorf("records %d problems %d", len(res.Records), len(res.Problems))
	}
}

func TestLinkList(t *testing.T) {
	res := mustLoad(t, Options{Collection: "danluu"}, "testdata/linklist")
	if len(res.Problems) != 0 {
		t.Fatalf("problems: %v", res.Problems)
	}
	if len(res.Records) != 5 {
		t.Fatalf("got %d records, want 5", len(res.Records))
	}
	mustValidate(t, res.Records)
	if f := res.Format["testdata/linklist/README.md"]; f != FormatLinkListMD {
		t.Errorf("format %q", f)
	}
	r := record(t, res, "danluu/https://status.cloud.google.com/incident/compute/16007")
	inc := r.Incident
	if inc.Org != "Google" || inc.Title.En != "A bad network configuration push withdrew IP blocks." ||
		inc.Summary.En != "A bad network configuration push withdrew IP blocks. Traffic was lost for 18 minutes." {
		t.Errorf("org %q title %q summary %q", inc.Org, inc.Title.En, inc.Summary.En)
	}
	if r.Where != "testdata/linklist/README.md:7" || !equalStrings(r.Unmapped, []string{"heading=Config Errors"}) || inc.Date != "" {
		t.Errorf("where %q unmapped %v", r.Where, r.Unmapped)
	}
	aws := record(t, res, "danluu/https://aws.amazon.com/message/41926")
	if aws.Incident.OrgSlug != "amazon" || aws.Incident.Title.En != "An operator typo removed more storage servers than intended." {
		t.Errorf("aws %q %q", aws.Incident.OrgSlug, aws.Incident.Title.En)
	}
	ex := record(t, res, "danluu/https://example-co.test/blog/outage?id=3")
	if ex.Incident.Title.En != "The config parser rejected a valid file." || ex.Incident.OrgSlug != "example-co" || !ex.OrgGuessed {
		t.Errorf("example %q %q", ex.Incident.Title.En, ex.Incident.OrgSlug)
	}
	if len(ex.Incident.Sources) != 2 || ex.Incident.Sources[1].URL != "https://mirror.test/x" {
		t.Errorf("second link of the item is not a second source: %+v", ex.Incident.Sources)
	}
	hw := record(t, res, "danluu/https://rackspace.com/blog/data-center-update")
	if hw.Incident.RootCause != "hardware-failure" || len(hw.Unmapped) != 0 {
		t.Errorf("heading Hardware: root %q unmapped %v", hw.Incident.RootCause, hw.Unmapped)
	}
	nd := record(t, res, "danluu/https://nodesc.test/pm")
	if nd.Incident.Title.En != "No Description Inc postmortem" || !nd.Incident.Summary.IsZero() {
		t.Errorf("no description: %q", nd.Incident.Title.En)
	}
}

func TestLinkListBroken(t *testing.T) {
	res := mustLoad(t, Options{}, "testdata/linklist-broken")
	for _, p := range res.Problems {
		t.Log(p)
	}
	if f := res.Format["testdata/linklist-broken/list.md"]; f != FormatLinkListMD {
		t.Errorf("format %q", f)
	}
	problem(t, res, "list.md:6", "not an absolute http(s) URL")
	problem(t, res, "list.md:7", "not an absolute http(s) URL")
	problem(t, res, "list.md:8", "the same postmortem as line 5")
	problem(t, res, "list.md:9", "malformed link item")
	if len(res.Records) != 1 || len(res.Problems) != 4 {
		t.Errorf("records %d problems %d", len(res.Records), len(res.Problems))
	}
}
