package importer

import (
	"os"
	"path/filepath"
	"sort"
	"strings"
	"testing"

	"github.com/incidentlib/incidentlib"
)

// TestCorpus loads the three public collections when INCIDENTLIB_CORPUS
// names the folder that holds them (shared/datasets). A taxonomy file can
// be given in INCIDENTLIB_TAXONOMY; the library's seeds/taxonomy.json is
// used otherwise, or the test taxonomy when that is missing.
func TestCorpus(t *testing.T) {
	root, ok := os.LookupEnv("INCIDENTLIB_CORPUS")
	if !ok || root == "" {
		t.Skip("INCIDENTLIB_CORPUS is not set")
	}
	if st, err := os.Stat(root); err != nil || !st.IsDir() {
		t.Fatalf("INCIDENTLIB_CORPUS=%q is not a folder: %v", root, err)
	}
	// The library's own taxonomy when it is there, else the test one.
	tax := mustTaxonomy(t)
	p := os.Getenv("INCIDENTLIB_TAXONOMY")
	if _, err := os.Stat("../seeds/taxonomy.json"); p == "" && err == nil {
		p = "../seeds/taxonomy.json"
	}
	if p != "" {
		data, err := os.ReadFile(p)
		if err != nil {
			t.Fatal(err)
		}
		if tax, err = incidentlib.ParseTaxonomy(data); err != nil {
			t.Fatal(err)
		}
	}
	res := mustLoad(t, Options{Taxonomy: tax}, root)
	for _, p := range res.Problems {
		t.Errorf("problem: %s", p)
	}

	byColl := map[string]int{}
	for _, r := range res.Records {
		coll, _, _ := strings.Cut(r.SourceKey, "/")
		byColl[coll]++
	}
	want := map[string]int{"icco": 242, "dfds": 39, "macintux": 20}
	for c, n := range want {
		if byColl[c] != n {
			t.Errorf("%s: %d records, want %d", c, byColl[c], n)
		}
	}
	if len(byColl) != len(want) {
		t.Errorf("collections %v", byColl)
	}

	// dfds: 40 postmortem-named files, of which the template is not a record;
	// README, LICENSE and SOURCE.txt of every collection are skipped too.
	skipped := map[string]string{}
	for _, s := range res.Skipped {
		rel, _ := filepath.Rel(root, s.Path)
		skipped[filepath.ToSlash(rel)] = s.Reason
	}
	for _, name := range []string{
		"README.md",
		"dfds-postmortems/LICENSE", "dfds-postmortems/README.md", "dfds-postmortems/SOURCE.txt", "dfds-postmortems/PMyyyy-nnn - Postmortem template.md",
		"icco-postmortems/LICENSE", "icco-postmortems/README.md", "icco-postmortems/SOURCE.txt",
		"macintux-service-postmortems/LICENSE", "macintux-service-postmortems/README", "macintux-service-postmortems/SOURCE.txt",
	} {
		if _, ok := skipped[name]; !ok {
			t.Errorf("%s not skipped", name)
		}
	}
	if len(skipped) != 11 {
		t.Errorf("skipped %v", skipped)
	}
	if f := res.Format[filepath.Join(root, "dfds-postmortems", "PM2022-009 - Bad AWS EKS AMI causing Kubernetes issues")]; f != FormatSectionedMD {
		t.Errorf("the dfds record without .md: format %q", f)
	}

	mustValidate(t, res.Records)
	licences := map[string]string{"icco": "GPL-3.0", "dfds": "MIT", "macintux": "MIT"}
	for _, r := range res.Records {
		coll, _, _ := strings.Cut(r.SourceKey, "/")
		var licence, attribution, key string
		extra(t, r.Incident, "licence", &licence)
		extra(t, r.Incident, "attribution", &attribution)
		extra(t, r.Incident, "source_key", &key)
		if licence != licences[coll] || !strings.HasPrefix(attribution, coll+", github.com/") || key != r.SourceKey {
			t.Errorf("%s: licence %q attribution %q key %q", r.SourceKey, licence, attribution, key)
		}
		if r.Incident.ID != "" || r.Incident.Review.WrittenBy != "import" || r.Incident.Title.En == "" || len(r.Incident.Sources) == 0 {
			t.Errorf("%s: id %q review %+v title %q", r.SourceKey, r.Incident.ID, r.Incident.Review, r.Incident.Title.En)
		}
		if err := r.Incident.ValidateTerms(tax); err != nil {
			t.Errorf("%s: %v", r.SourceKey, err)
		}
	}

	// Figures for the report.
	dated, guessed := 0, map[string]int{}
	for _, r := range res.Records {
		if r.Incident.Date != "" {
			dated++
		}
		if r.OrgGuessed {
			coll, _, _ := strings.Cut(r.SourceKey, "/")
			guessed[coll]++
		}
	}
	t.Logf("taxonomy %s", p)
	t.Logf("records %d %v; dated %d; orgs not in the alias table %v", len(res.Records), byColl, dated, guessed)
	counts := UnmappedCounts(res.Records)
	byField := map[string][2]int{}
	for _, c := range counts {
		field, _, _ := strings.Cut(c.Value, "=")
		v := byField[field]
		byField[field] = [2]int{v[0] + 1, v[1] + c.Count}
	}
	t.Logf("unmapped values (distinct, occurrences) by field: %v", byField)
	var top []string
	for i, c := range counts {
		if i == 25 {
			break
		}
		top = append(top, c.Value+" "+itoa(c.Count))
	}
	t.Logf("most common unmapped: %s", strings.Join(top, ", "))
	var dups []string
	for u, keys := range res.DuplicateURLs() {
		dups = append(dups, u+" "+strings.Join(keys, " "))
	}
	sort.Strings(dups)
	t.Logf("%d source URLs in more than one record:\n%s", len(dups), strings.Join(dups, "\n"))
}

func itoa(n int) string {
	if n == 0 {
		return "0"
	}
	var b []byte
	for ; n > 0; n /= 10 {
		b = append([]byte{byte('0' + n%10)}, b...)
	}
	return string(b)
}
