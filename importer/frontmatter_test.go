package importer

import (
	"fmt"
	"strings"
	"testing"
	"unicode/utf8"

	"github.com/incidentlib/incidentlib"
)

func TestFrontmatter(t *testing.T) {
	res := mustLoad(t, Options{}, "testdata/icco")
	if len(res.Problems) != 0 {
		t.Fatalf("problems: %v", res.Problems)
	}
	if len(res.Records) != 5 {
		t.Fatalf("got %d records, want 5", len(res.Records))
	}
	if len(res.Skipped) != 2 { // LICENSE and SOURCE.txt
		t.Errorf("skipped %v", res.Skipped)
	}
	mustValidate(t, res.Records)

	t.Run("AllFields", func(t *testing.T) {
		r := record(t, res, "icco/11111111-1111-4111-8111-111111111111")
		inc := r.Incident
		if r.Where != "testdata/icco/data/11111111-1111-4111-8111-111111111111.md:1" {
			t.Errorf("where = %q", r.Where)
		}
		if inc.ID != "" || inc.Review.WrittenBy != "import" || inc.Review.ReviewedAt != "" {
			t.Errorf("id %q review %+v", inc.ID, inc.Review)
		}
		if inc.Org != "Google" || inc.OrgSlug != "google" || r.OrgGuessed {
			t.Errorf("org %q %q guessed %v, want Google Cloud resolved to google", inc.Org, inc.OrgSlug, r.OrgGuessed)
		}
		if inc.Title.En != "Load balancer configuration push drops traffic in one region" || inc.Title.Ko != "" {
			t.Errorf("title = %+v", inc.Title)
		}
		if inc.Date != "2021-06-01" || inc.DateKind != "incident" {
			t.Errorf("date %q %q", inc.Date, inc.DateKind)
		}
		if inc.Timeline.ResolvedAfter != "2h30m" || inc.Timeline.DetectedAfter != "" {
			t.Errorf("timeline %+v", inc.Timeline)
		}
		if !strings.HasPrefix(inc.Summary.En, "A configuration push removed backends") {
			t.Errorf("summary = %q", inc.Summary.En)
		}
		var narrative string
		extra(t, inc, "narrative", &narrative)
		if !strings.Contains(narrative, "second paragraph") {
			t.Errorf("narrative = %q", narrative)
		}
		want := []incidentlib.Source{{URL: "https://status.example-cloud.test/incidents/42?utm_source=feed", Kind: "postmortem",
			Archived: "https://web.archive.org/web/20260101000000/https://status.example-cloud.test/incidents/42"}}
		if len(inc.Sources) != 1 || inc.Sources[0].URL != want[0].URL || inc.Sources[0].Kind != want[0].Kind || inc.Sources[0].Archived != want[0].Archived {
			t.Errorf("sources = %+v", inc.Sources)
		}
		// cloud -> domain cloud; config-change -> root cause; load balancer -> component; latency -> symptom.
		if !equalStrings(inc.Domain, []string{"cloud"}) || inc.RootCause != "config-change" ||
			!equalStrings(inc.Components, []string{"load-balancer"}) || !equalStrings(inc.Symptoms, []string{"high-latency"}) {
			t.Errorf("terms: domain %v root %q components %v symptoms %v", inc.Domain, inc.RootCause, inc.Components, inc.Symptoms)
		}
		if inc.Severity != "unknown" {
			t.Errorf("severity = %q", inc.Severity)
		}
		if !equalStrings(r.Unmapped, []string{"keywords=made-up keyword"}) {
			t.Errorf("unmapped = %v", r.Unmapped)
		}
		var tags map[string][]string
		extra(t, inc, "source_tags", &tags)
		if len(tags) != 1 || !equalStrings(tags["keywords"], []string{"made-up keyword"}) {
			t.Errorf("source_tags = %v", tags)
		}
		var licence, attribution, key, product string
		extra(t, inc, "licence", &licence)
		extra(t, inc, "attribution", &attribution)
		extra(t, inc, "source_key", &key)
		extra(t, inc, "product", &product)
		if licence != "GPL-3.0" || attribution != "icco, github.com/icco/postmortems at f901e76eb5f41ccd62bbb0eb1bbad705acfa8f4c" ||
			key != r.SourceKey || product != "Cloud Load Balancing" {
			t.Errorf("licence %q attribution %q key %q product %q", licence, attribution, key, product)
		}
	})
	t.Run("PublishedDateAndBodyAsSummary", func(t *testing.T) {
		r := record(t, res, "icco/22222222-2222-4222-8222-222222222222")
		inc := r.Incident
		if inc.Date != "2012-06-30" || inc.DateKind != "published" || inc.Timeline.ResolvedAfter != "" {
			t.Errorf("date %q %q timeline %+v", inc.Date, inc.DateKind, inc.Timeline)
		}
		if inc.Summary.En != "The body is the only account of this incident, so it becomes the summary." {
			t.Errorf("summary = %q", inc.Summary.En)
		}
		if _, ok := inc.Extra["narrative"]; ok {
			t.Error("narrative kept although the body became the summary")
		}
		if inc.Org != "Amazon" || inc.OrgSlug != "amazon" || inc.Title.En != "Storage service disruption, quoted title" {
			t.Errorf("org %q %q title %q", inc.Org, inc.OrgSlug, inc.Title.En)
		}
		if inc.RootCause != "hardware-failure" || !equalStrings(inc.Symptoms, []string{"data-loss"}) {
			t.Errorf("root %q symptoms %v", inc.RootCause, inc.Symptoms)
		}
		// "power loss" also resolves to hardware-failure: no second root cause.
		if len(r.Warnings) != 0 {
			t.Errorf("warnings %v", r.Warnings)
		}
	})
	t.Run("Before1970AndNoTitle", func(t *testing.T) {
		r := record(t, res, "icco/33333333-3333-4333-8333-333333333333")
		inc := r.Incident
		if inc.Date != "1628-08-10" || inc.DateKind != "incident" || inc.Timeline.ResolvedAfter != "20m" {
			t.Errorf("date %q timeline %+v", inc.Date, inc.Timeline)
		}
		if inc.Title.En != "A new warship heeled over and sank twenty minutes into its maiden voyage because it was top-heavy." {
			t.Errorf("title = %q", inc.Title.En)
		}
		var derived bool
		extra(t, inc, "title_derived", &derived)
		if !derived || !r.OrgGuessed || inc.OrgSlug != "swedish-navy" {
			t.Errorf("derived %v guessed %v slug %q", derived, r.OrgGuessed, inc.OrgSlug)
		}
		if _, ok := inc.Extra["source_tags"]; ok || len(r.Unmapped) != 0 {
			t.Errorf("empty categories gave tags: %v", r.Unmapped)
		}
	})
	t.Run("UTCOffset", func(t *testing.T) {
		inc := record(t, res, "icco/44444444-4444-4444-8444-444444444444").Incident
		// The date is the one the source's own clock shows.
		if inc.Date != "2021-03-01" || inc.Timeline.ResolvedAfter != "1h45m" {
			t.Errorf("date %q timeline %+v", inc.Date, inc.Timeline)
		}
		if inc.Org != "Example Local" || !equalStrings(inc.Contributing, []string{"time-handling"}) {
			t.Errorf("org %q contributing %v", inc.Org, inc.Contributing)
		}
	})
	t.Run("NoDates", func(t *testing.T) {
		r := record(t, res, "icco/55555555-5555-4555-8555-555555555555")
		inc := r.Incident
		if inc.Date != "" || inc.DateKind != "" || inc.Timeline.ResolvedAfter != "" {
			t.Errorf("date %q %q", inc.Date, inc.DateKind)
		}
		if inc.Title.En != "Nothing in this record says when it happened." {
			t.Errorf("title = %q", inc.Title.En)
		}
		if !equalStrings(inc.Contributing, []string{"automation"}) {
			t.Errorf("contributing %v", inc.Contributing)
		}
	})
}

func TestFrontmatterBroken(t *testing.T) {
	res := mustLoad(t, Options{Format: FormatFrontmatterMD, Collection: "icco"}, "testdata/icco-broken")
	for _, p := range res.Problems {
		t.Log(p)
	}
	if len(res.Records) != 0 {
		t.Errorf("records from broken files: %d", len(res.Records))
	}
	cases := []struct{ where, text string }{
		{"nofm.md:1", "no front matter"},
		{"unterminated.md:1", "unterminated front matter"},
		{"baddate.md:5", "start_time"},
		{"dupkey.md:6", `duplicate key "title" (first at line 4)`},
		{"empty.md", "empty file"},
		{"nonutf8.md:4", "byte offset"},
		{"notmapping.md:2", "not a mapping"},
		{"badurl.md:3", "not an absolute http(s) URL"},
		{"badyaml.md:4", "malformed front matter"},
		{"future.md:5", "in the future"},
	}
	for _, c := range cases {
		t.Run(c.where, func(t *testing.T) { problem(t, res, c.where, c.text) })
	}
	if len(res.Problems) != len(cases) {
		t.Errorf("got %d problems, want %d", len(res.Problems), len(cases))
	}
}

func TestFrontmatterTruncates(t *testing.T) {
	long := strings.Repeat("é", incidentlib.MaxTextLen+10)
	title := strings.Repeat("t", incidentlib.MaxTitleLen+1)
	data := fmt.Sprintf("---\nuuid: u1\nurl: https://example.test/x\ntitle: %s\ncompany: Example\nsummary: %s\n---\n", title, long)
	res, err := LoadData("x/u1.md", []byte(data), Options{Collection: "icco"})
	if err != nil || len(res.Records) != 1 {
		t.Fatalf("err %v problems %v", err, res.Problems)
	}
	r := res.Records[0]
	mustValidate(t, res.Records)
	if n := utf8.RuneCountInString(r.Incident.Summary.En); n != incidentlib.MaxTextLen || !strings.HasSuffix(r.Incident.Summary.En, "…") {
		t.Errorf("summary has %d runes", n)
	}
	if n := utf8.RuneCountInString(r.Incident.Title.En); n != incidentlib.MaxTitleLen || !strings.HasSuffix(r.Incident.Title.En, "…") {
		t.Errorf("title has %d runes", n)
	}
	if len(r.Warnings) != 2 {
		t.Errorf("warnings %v", r.Warnings)
	}
	var licence string
	extra(t, r.Incident, "licence", &licence)
	if licence != "NOASSERTION" {
		t.Errorf("licence without a LICENSE file = %q", licence)
	}
}

func TestFrontmatterEndBeforeStart(t *testing.T) {
	data := "---\nuuid: u2\nurl: https://example.test/x\ntitle: Backwards\ncompany: Example\nstart_time: 2020-01-02T00:00:00Z\nend_time: 2020-01-01T00:00:00Z\n---\n"
	res, _ := LoadData("u2.md", []byte(data), Options{})
	if len(res.Records) != 1 || res.Records[0].Incident.Timeline.ResolvedAfter != "" || len(res.Records[0].Warnings) != 1 {
		t.Fatalf("records %+v problems %v", res.Records, res.Problems)
	}
}
