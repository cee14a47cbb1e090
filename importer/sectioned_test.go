package importer

import (
	"strings"
	"testing"
)

func TestSectioned(t *testing.T) {
	res := mustLoad(t, Options{}, "testdata/dfds")
	if len(res.Problems) != 0 {
		t.Fatalf("problems: %v", res.Problems)
	}
	if len(res.Records) != 3 {
		t.Fatalf("got %d records, want 3", len(res.Records))
	}
	mustValidate(t, res.Records)

	t.Run("SkipsNonRecords", func(t *testing.T) {
		want := map[string]string{
			"LICENSE":                             "licence file",
			"README.md":                           "README",
			"SOURCE.txt":                          "source note",
			"PMyyyy-nnn - Postmortem template.md": "template",
		}
		if len(res.Skipped) != len(want) {
			t.Errorf("skipped %v", res.Skipped)
		}
		for _, s := range res.Skipped {
			name := s.Path[strings.LastIndex(s.Path, "/")+1:]
			if w, ok := want[name]; !ok || !strings.Contains(s.Reason, w) {
				t.Errorf("skip %s: %q", name, s.Reason)
			}
		}
	})
	t.Run("AllSections", func(t *testing.T) {
		r := record(t, res, "dfds/PM2021-004")
		inc := r.Incident
		if r.Where != "testdata/dfds/PM2021-004 - Certificate expiry.md:1" {
			t.Errorf("where %q", r.Where)
		}
		if inc.Org != "DFDS" || inc.OrgSlug != "dfds" || r.OrgGuessed {
			t.Errorf("org %q %q", inc.Org, inc.OrgSlug)
		}
		if inc.Title.En != "Sign-in certificate expired" || inc.Date != "2021-03-31" || inc.DateKind != "incident" {
			t.Errorf("title %q date %q", inc.Title.En, inc.Date)
		}
		if inc.Summary.En != "The token signing certificate of the sign-in service expired, and users could not sign in to the console." {
			t.Errorf("summary %q", inc.Summary.En)
		}
		wantLessons := "- We are not monitoring the sign-in service\n\nContributing factors:\n- No monitoring of certificate expiry\n- Auto renewal not configured"
		if inc.Lessons.En != wantLessons {
			t.Errorf("lessons %q", inc.Lessons.En)
		}
		if len(inc.ActionItems) != 2 || inc.ActionItems[0].Text.En != "Monitor certificate expiry: with a script or a calendar\nreminder, whichever comes first." ||
			inc.ActionItems[1].Text.En != "Find an alternative sign-in path" {
			t.Errorf("action items %+v", inc.ActionItems)
		}
		if inc.Timeline.DetectedAfter != "5m" || inc.Timeline.ResolvedAfter != "1h24m" {
			t.Errorf("timeline %+v", inc.Timeline)
		}
		if !equalStrings(r.Unmapped, []string{"category=Authentication/Authorisation"}) {
			t.Errorf("unmapped %v", r.Unmapped)
		}
		want := "https://github.com/dfds/postmortems/blob/2c902284250cfa7b5c3823665cb9dbb9e8d68e21/PM2021-004%20-%20Certificate%20expiry.md"
		if len(inc.Sources) != 1 || inc.Sources[0].URL != want {
			t.Errorf("sources %+v", inc.Sources)
		}
		var licence string
		var notes []string
		var rows []map[string]string
		extra(t, inc, "licence", &licence)
		extra(t, inc, "source_notes", &notes)
		extra(t, inc, "source_timeline", &rows)
		if licence != "MIT" || len(notes) != 1 || notes[0] != "[1] Measured from the certificate expiry." || len(rows) != 3 || rows[2]["event"] != "Sign-in confirmed working" {
			t.Errorf("licence %q notes %v rows %v", licence, notes, rows)
		}
		if strings.Contains(string(inc.Extra["source_stats"]), "AB") || strings.Contains(inc.Summary.En+inc.Lessons.En, "AB, CD") {
			t.Error("attendees were copied")
		}
	})
	t.Run("FileWithoutExtension", func(t *testing.T) {
		r := record(t, res, "dfds/PM2022-009")
		inc := r.Incident
		if res.Format["testdata/dfds/PM2022-009 - Record without an extension"] != FormatSectionedMD {
			t.Errorf("format %v", res.Format)
		}
		// Stats say N/A and ?: the durations come from the marked rows, measured from the first row.
		if inc.Timeline.DetectedAfter != "54h58m" || inc.Timeline.ResolvedAfter != "61h43m" {
			t.Errorf("timeline %+v", inc.Timeline)
		}
		var basis map[string]string
		extra(t, inc, "timeline_basis", &basis)
		if basis["detected_after"] != "timeline table" {
			t.Errorf("basis %v", basis)
		}
		if inc.Date != "2022-10-29" || !equalStrings(inc.Domain, []string{"container-platform"}) || len(r.Unmapped) != 0 {
			t.Errorf("date %q domain %v unmapped %v", inc.Date, inc.Domain, r.Unmapped)
		}
		if inc.Lessons.En != "Pinning versions would have avoided this.\n\nContributing factors:\n- Images are picked up automatically" {
			t.Errorf("lessons %q", inc.Lessons.En)
		}
	})
	t.Run("TitleFromFileName", func(t *testing.T) {
		r := record(t, res, "dfds/PM2019-001")
		inc := r.Incident
		if inc.Title.En != "Cluster nodes deleted" || inc.Date != "2019-12-04" {
			t.Errorf("title %q date %q", inc.Title.En, inc.Date)
		}
		if inc.Timeline.DetectedAfter != "5m" || inc.Timeline.ResolvedAfter != "1h" {
			t.Errorf("timeline %+v", inc.Timeline)
		}
		if len(inc.ActionItems) != 2 || inc.ActionItems[1].Text.En != "Add priority classes" {
			t.Errorf("action items %+v", inc.ActionItems)
		}
	})
}

func TestSectionedBroken(t *testing.T) {
	res := mustLoad(t, Options{}, "testdata/dfds-broken")
	for _, p := range res.Problems {
		t.Log(p)
	}
	problem(t, res, "Two timelines.md:13", `section "Timeline" appears twice (first at line 7)`)
	problem(t, res, "Empty.md", "empty file")
	problem(t, res, "Latin1.md:5", "byte offset 35")
	if len(res.Records) != 0 || len(res.Problems) != 3 {
		t.Errorf("records %d problems %d", len(res.Records), len(res.Problems))
	}
}

func TestStatDurations(t *testing.T) {
	for in, want := range map[string]string{
		"5 minutes": "5m", "1415 minutes": "23h35m", "19 hours 43 minutes.": "19h43m", "11 Days": "264h",
		"7 hours": "7h", "54 hours 10 minutes": "54h10m", "279 minutes [^3]": "4h39m", "0 minutes": "0m",
		"N/A": "", "?": "", "YYY": "", "": "",
	} {
		if got := parseStatDuration(in); got != want {
			t.Errorf("parseStatDuration(%q) = %q, want %q", in, got, want)
		}
	}
}

func TestSectionedOrgOption(t *testing.T) {
	data := []byte("# Title\n\n## Summary\n\nText.\n\n## Timeline\n\n| Time | Event |\n| --- | --- |\n| 2020-05-01 10:00 | Start |\n")
	res, err := LoadData("PM2020-001 - x.md", data, Options{Org: "Acme Corp", Collection: "acme"})
	if err != nil || len(res.Records) != 1 {
		t.Fatalf("err %v problems %v", err, res.Problems)
	}
	r := res.Records[0]
	if r.Incident.Org != "Acme Corp" || r.Incident.OrgSlug != "acme-corp" || r.SourceKey != "acme/PM2020-001" || r.Incident.Date != "2020-05-01" {
		t.Errorf("org %q %q key %q date %q", r.Incident.Org, r.Incident.OrgSlug, r.SourceKey, r.Incident.Date)
	}
	if len(r.Incident.Sources) != 0 {
		t.Errorf("sources without a repository: %+v", r.Incident.Sources)
	}
}
