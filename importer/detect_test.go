package importer

import (
	"strings"
	"testing"
	"time"
	"unicode/utf8"

	"github.com/incidentlib/incidentlib"
)

func TestDetect(t *testing.T) {
	cases := []struct {
		path string
		want Format
	}{
		{"testdata/iljson/good/one.json", FormatILJSON},
		{"testdata/iljson/good/array.json", FormatILJSON},
		{"testdata/iljson/good/lines.jsonl", FormatJSONL},
		{"testdata/icco/data/11111111-1111-4111-8111-111111111111.md", FormatFrontmatterMD},
		{"testdata/icco", FormatFrontmatterMD},
		{"testdata/dfds/PM2021-004 - Certificate expiry.md", FormatSectionedMD},
		{"testdata/dfds/PM2022-009 - Record without an extension", FormatSectionedMD},
		{"testdata/dfds", FormatSectionedMD},
		{"testdata/macintux/list-of-postmortems.json", FormatJSONList},
		{"testdata/macintux", FormatJSONList},
		{"testdata/linklist/README.md", FormatLinkListMD},
	}
	for _, c := range cases {
		got, err := Detect(c.path)
		if err != nil || got != c.want {
			t.Errorf("Detect(%s) = %q, %v; want %q", c.path, got, err, c.want)
		}
	}
	for path, why := range map[string]string{
		"testdata/dfds/LICENSE":                             "licence",
		"testdata/dfds/SOURCE.txt":                          "source note",
		"testdata/dfds/README.md":                           "README",
		"testdata/dfds/PMyyyy-nnn - Postmortem template.md": "template",
	} {
		_, err := Detect(path)
		if incidentlib.ErrorCode(err) != incidentlib.EINVALID || !strings.Contains(incidentlib.ErrorMessage(err), why) {
			t.Errorf("Detect(%s) error %v, want one saying %q", path, err, why)
		}
	}
	if _, err := Detect("testdata/does-not-exist"); err == nil {
		t.Error("no error for a missing path")
	}
	if f, err := DetectData("x.md", []byte("Just some prose.\n")); err != nil || f != "" {
		t.Errorf("prose: %q %v", f, err)
	}
}

func TestLoadErrors(t *testing.T) {
	if _, err := Load([]string{"testdata/does-not-exist"}, Options{}); err == nil {
		t.Error("no error for a missing path")
	}
	if _, err := Load([]string{"testdata/icco"}, Options{Format: "yaml"}); incidentlib.ErrorCode(err) != incidentlib.EINVALID {
		t.Errorf("unknown format: %v", err)
	}
	res, err := LoadData("notes.md", []byte("Just some prose.\n"), Options{})
	if err != nil || len(res.Problems) != 1 || !strings.Contains(res.Problems[0].Reason, "format not recognised") {
		t.Errorf("prose: %v %v", err, res.Problems)
	}
}

func TestTruncate(t *testing.T) {
	if s, cut := truncate("short", 10); s != "short" || cut {
		t.Errorf("%q %v", s, cut)
	}
	s, cut := truncate("가나다라마바사", 4)
	if s != "가나다…" || !cut || utf8.RuneCountInString(s) != 4 {
		t.Errorf("%q %v", s, cut)
	}
	if s, _ := truncate("ab   cdef", 5); s != "ab…" {
		t.Errorf("trailing space kept: %q", s)
	}
}

func TestFormatDuration(t *testing.T) {
	for d, want := range map[time.Duration]string{
		73 * time.Hour: "73h", 45 * time.Minute: "45m", 150 * time.Minute: "2h30m", 39 * time.Second: "39s",
		time.Hour + 5*time.Second: "1h5s", 0: "0m", -time.Second: "",
	} {
		got := formatDuration(d)
		if got != want {
			t.Errorf("formatDuration(%v) = %q, want %q", d, got, want)
		}
		if got != "" {
			if back, err := incidentlib.ParseDuration(got); err != nil || back != d {
				t.Errorf("%q does not parse back to %v: %v %v", got, d, back, err)
			}
		}
	}
}
