package seeds_test

import (
	"strings"
	"testing"

	"github.com/incidentlib/incidentlib"
	"github.com/incidentlib/incidentlib/glossary"
	"github.com/incidentlib/incidentlib/seeds"
)

// TestGlossaryFile checks the built-in glossary: the file parses (every
// entry valid: both sides non-empty, no form twice on a side, no key
// twice), no English-Korean pair stands in two entries, the file does not
// repeat a taxonomy label pair (those are derived), every label of the
// taxonomy is paired, and there are at least 300 entries.
func TestGlossaryFile(t *testing.T) {
	tax := seeds.MustTaxonomy()
	data, err := seeds.File("glossary.json")
	if err != nil {
		t.Fatal(err)
	}
	file, err := glossary.Parse(data)
	if err != nil {
		t.Fatal(err)
	}
	pairs := map[[2]string]int{}
	for i, e := range file {
		for _, en := range e.En {
			for _, ko := range e.Ko {
				k := [2]string{strings.ToLower(en), ko}
				if j, ok := pairs[k]; ok {
					t.Errorf("the pair %q/%q stands in entries %d and %d", en, ko, j, i)
				}
				pairs[k] = i
			}
		}
	}
	for _, term := range tax.Terms {
		if i, ok := pairs[[2]string{strings.ToLower(term.Label.En), term.Label.Ko}]; ok {
			t.Errorf("entry %d repeats the label of %s:%s, which the glossary takes from the taxonomy", i, term.Kind, term.Slug)
		}
	}
	all, err := seeds.Glossary(tax)
	if err != nil {
		t.Fatal(err)
	}
	if err := glossary.Check(all); err != nil {
		t.Fatal(err)
	}
	for _, term := range tax.Terms {
		found := false
		for _, e := range all {
			if containsFold(e.En, term.Label.En) && containsFold(e.Ko, term.Label.Ko) {
				found = true
				break
			}
		}
		if !found {
			t.Errorf("the label of %s:%s (%q/%q) is not paired", term.Kind, term.Slug, term.Label.En, term.Label.Ko)
		}
	}
	if len(all) < 300 {
		t.Errorf("the glossary has %d entries, fewer than 300", len(all))
	}
	t.Logf("%d entries in the file, %d with the taxonomy's labels", len(file), len(all))
}

func containsFold(list []string, s string) bool {
	for _, x := range list {
		if strings.EqualFold(x, s) {
			return true
		}
	}
	return false
}

// TestGlossaryEntryValidate refuses malformed entries with INVALID.
func TestGlossaryEntryValidate(t *testing.T) {
	long := strings.Repeat("a", glossary.MaxFormRunes+1)
	for name, e := range map[string]glossary.Entry{
		"NoEnglish":    {Ko: []string{"배포"}},
		"NoKorean":     {En: []string{"rollout"}},
		"EmptyForm":    {En: []string{""}, Ko: []string{"배포"}},
		"Spaces":       {En: []string{" rollout"}, Ko: []string{"배포"}},
		"TooLong":      {En: []string{long}, Ko: []string{"배포"}},
		"Repeated":     {En: []string{"rollout", "Rollout"}, Ko: []string{"배포"}},
		"HangulInEn":   {En: []string{"롤아웃"}, Ko: []string{"배포"}},
		"Punctuation":  {En: []string{"--"}, Ko: []string{"배포"}},
		"ControlChar":  {En: []string{"roll\u0000out"}, Ko: []string{"배포"}},
		"TooManyWords": {En: []string{"a b c d e f g"}, Ko: []string{"배포"}},
		"TooManyForms": {En: []string{"a1", "a2", "a3", "a4", "a5", "a6", "a7", "a8", "a9"}, Ko: []string{"배포"}},
		"LongSpaced":   {En: []string{" " + strings.Repeat("a", 10_000)}, Ko: []string{"배포"}},
		"LongNote":     {En: []string{"rollout"}, Ko: []string{"배포"}, Note: strings.Repeat("n", glossary.MaxNoteRunes+1)},
		"ControlNote":  {En: []string{"rollout"}, Ko: []string{"배포"}, Note: "a\u0007bell"},
	} {
		t.Run(name, func(t *testing.T) {
			err := glossary.Validate(&e)
			if err == nil {
				t.Fatal("accepted")
			}
			if code := incidentlibCode(err); code != "INVALID" {
				t.Fatalf("code %q, want INVALID: %v", code, err)
			}
			if msg := incidentlib.ErrorMessage(err); len(msg) > 300 {
				t.Fatalf("the message is %d bytes: it quotes what it refuses unbounded", len(msg))
			}
		})
	}
	ok := glossary.Entry{En: []string{"DNS"}, Ko: []string{"DNS", "도메인 네임 시스템"}, Note: "a loanword,\nkept on both sides"}
	if err := glossary.Validate(&ok); err != nil {
		t.Fatal(err)
	}
}

func incidentlibCode(err error) string { return incidentlib.ErrorCode(err) }
