package search

import (
	"encoding/json"
	"slices"
	"testing"

	"github.com/incidentlib/incidentlib"
	"github.com/incidentlib/incidentlib/gen"
	"github.com/incidentlib/incidentlib/seeds"
)

// bleveTokens is what bleve's analyzer chain (the reference) makes of s.
func bleveTokens(s string) []token {
	var out []token
	for _, t := range bleveAnalyzer.Analyze([]byte(s)) {
		out = append(out, token{Term: string(t.Term), Position: t.Position, Start: t.Start, End: t.End})
	}
	return out
}

// TestAnalyzerMatchesBleve holds the fast path of the analyzer to bleve's
// chain, token for token (term, position, offsets), on every text of the
// seeds and of a generated corpus, and on edge cases of word breaking.
func TestAnalyzerMatchesBleve(t *testing.T) {
	texts := []string{
		"keep-alive", "raft_threshold_mb", "14:00", "3.5 GB", "example.com", "don't", "Kubernetes' nodes", "node’s",
		"a _ b", "__init__", "_1", "a__", "1,000,000", "1,a", "a,1", "a:b", "a::b", "1:2", "a.b.c", "a..b", "a.", ".a",
		"U.S.A.", "x'y", "'quoted'", "p99=20ms", "IL-0213", "v1.2.3", "e.g.,", "Redis의", "73시간", "프록시·인그레스",
		"리버스 프록시·인그레스의", "“quoted” — dash – en…", "3×", "a→b", "10°C", "클러스터의 Consul KV", "The outages of Consul",
		"리더가 the 선출", "A:B:C", "a:1", "1.a", "a1b2", "'s", "’s", "s'", "...", "", "   ", "ＲＥＤＩＳ", "café", "naïve",
		"日本語のテキスト", "カタカナ", "emoji 🔥 text", "tab\there", "new\nline", "x\u00a0y",
	}
	for _, in := range mustSeedsAndGenerated(t) {
		for i := range fields {
			if s := fields[i].text(in); s != "" {
				texts = append(texts, s)
			}
		}
	}
	a := newTextAnalyzer()
	// Terms that start with c, l or 9, and Korean terms (bigrams and a
	// single syllable) that the seeds and the generated texts hold.
	var letters termFilter
	letters.first['c'], letters.first['l'], letters.first['9'] = true, true, true
	hangul := []string{"리더", "클러", "러스", "장애", "서비", "비스", "의"}
	for _, h := range hangul {
		letters.add(h)
	}
	wanted := func(term string) bool {
		if isHangulOnly(term) {
			return slices.Contains(hangul, term)
		}
		return letters.first[term[0]]
	}
	var every termFilter
	for c := range every.first {
		every.first[c] = true
	}
	kept, asciiTexts := 0, 0
	for _, s := range texts {
		got := a.analyze(s, nil)
		want := bleveTokens(s)
		if !slices.Equal(got, want) {
			t.Errorf("analyze(%q):\n got  %v\n want %v", s, got, want)
		}
		// analyzeSome keeps every token of a wanted term, as analyze
		// makes it (position included), and makes no other token.
		some := a.analyzeSome(s, nil, &letters)
		for _, tok := range got {
			if wanted(tok.Term) && !slices.Contains(some, tok) {
				t.Errorf("analyzeSome(%q) lost %v", s, tok)
			}
			if isHangulOnly(tok.Term) && slices.Contains(hangul, tok.Term) {
				kept++
			}
		}
		for _, tok := range some {
			if !slices.Contains(got, tok) {
				t.Errorf("analyzeSome(%q) made %v", s, tok)
			}
		}
		if isASCII(s) {
			checkASCIIWords(t, a, s, got, &letters)
			checkASCIIWords(t, a, s, got, &every)
			asciiTexts++
		}
	}
	if asciiTexts < 1000 {
		t.Errorf("only %d ASCII texts to hold asciiWords to", asciiTexts)
	}
	if kept < 100 {
		t.Errorf("only %d tokens of the Korean terms in the texts: the test needs other terms", kept)
	}
}

// checkASCIIWords holds asciiWords to analyze, whose tokens of s are
// toks: the same words with the same terms and bytes, those want may look
// for, and every word start it finds is one tokenize finds.
func checkASCIIWords(t *testing.T, a *analyzer, s string, toks []token, want *termFilter) {
	t.Helper()
	var exp []token
	for _, tok := range toks {
		if want.first[tok.Term[0]] {
			exp = append(exp, token{Term: tok.Term, Start: tok.Start, End: tok.End})
		}
	}
	if got := a.asciiWords(s, nil, want); !slices.Equal(got, exp) {
		t.Errorf("asciiWords(%q):\n got  %v\n want %v", s, got, exp)
	}
	raw, _ := a.tokenize(s, nil)
	var starts []int
	for i := range len(s) {
		if asciiWordStart(s, i) {
			starts = append(starts, i)
		}
	}
	var rawStarts []int
	for _, r := range raw {
		rawStarts = append(rawStarts, r.Start)
	}
	if !slices.Equal(starts, rawStarts) {
		t.Errorf("word starts of %q: %v, tokenize's %v", s, starts, rawStarts)
	}
}

func mustSeedsAndGenerated(t *testing.T) []*incidentlib.Incident {
	t.Helper()
	incs, err := gen.Generate(gen.Options{Count: 300, Seed: 3, Taxonomy: seeds.MustTaxonomy()})
	if err != nil {
		t.Fatal(err)
	}
	s, err := seeds.Incidents()
	if err != nil {
		t.Fatal(err)
	}
	return append(incs, s...)
}

// TestTextsOf holds the record scanner to the full decoder.
func TestTextsOf(t *testing.T) {
	check := func(name string, b []byte) {
		t.Helper()
		var full incidentlib.Incident
		wantErr := json.Unmarshal(b, &full)
		got, err := textsOf(b)
		if (err != nil) != (wantErr != nil) {
			t.Fatalf("%s: error %v, the decoder says %v", name, err, wantErr)
		}
		if err != nil {
			return
		}
		// What the index reads: the org and each text's two languages.
		read := func(in *incidentlib.Incident) string {
			out := in.Org
			for i := range fields {
				out += "\x00" + fields[i].text(in)
			}
			return out
		}
		if read(got) != read(&full) {
			t.Errorf("%s:\n got  %q\n want %q", name, read(got), read(&full))
		}
	}
	for _, in := range mustSeedsAndGenerated(t) {
		b, err := json.Marshal(in)
		if err != nil {
			t.Fatal(err)
		}
		check(in.ID, b)
		if !scanTexts(b, &incidentlib.Incident{}) {
			t.Fatalf("%s: the scanner left a record the store writes to the full decoder", in.ID)
		}
	}
	for name, b := range map[string]string{
		"Escapes":      `{"id":"IL-0001","org":"A \"B\" \u003cC\u003e","title":{"en":"x\\y \ud83d\udd25","ko":"\uD55C"}}`,
		"NullTexts":    `{"id":"IL-0001","org":null,"title":null,"summary":{"en":null,"ko":"요약"}}`,
		"OtherCase":    `{"id":"IL-0001","Title":{"en":"capital"}}`,
		"TextCase":     `{"id":"IL-0001","title":{"EN":"capital"}}`,
		"Nested":       `{"id":"IL-0001","notes":[{"at":"x","text":{"en":"a \"}\" b"}}],"lessons":{"en":"after"}}`,
		"Duplicate":    `{"id":"IL-0001","title":{"en":"first"},"title":{"en":"second"}}`,
		"Malformed":    `{"id":"IL-0001","title":{"en":"x"`,
		"Trailing":     `{"id":"IL-0001"} x`,
		"Whitespace":   " {\n \"org\" : \"Acme\" ,\n \"title\" : { \"en\" : \"t\" } }\n",
		"ExtraTextKey": `{"title":{"en":"t","ko":"k","fr":"f"}}`,
	} {
		check(name, []byte(b))
	}
}
