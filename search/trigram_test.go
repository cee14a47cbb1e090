package search

import (
	"slices"
	"strings"
	"testing"

	"github.com/RoaringBitmap/roaring/v2"

	"github.com/incidentlib/incidentlib"
)

func TestFindTerms(t *testing.T) {
	tri := func(s string) string { return trigramMark + s }
	cases := []struct {
		query string
		want  []string
	}{
		{"outage", []string{"outag"}},
		{`"leader election"`, []string{"leader", "elect"}},
		{"풀", []string{"풀"}},
		{"커넥", []string{"커넥"}},
		// Three syllables: one trigram, read as a word.
		{"커넥션", []string{tri("커넥션")}},
		// Four: two trigrams in a row; five: the first and the last.
		{"커넥션풀", []string{tri("커넥션"), tri("넥션풀")}},
		{"데이터베이", []string{tri("데이터"), "", tri("터베이")}},
		{"데이터베이스", []string{tri("데이터"), "", tri("터베이"), tri("베이스")}},
		// Words keep their places; each run of Hangul gets its own.
		{`"Consul 클러스터"`, []string{"consul", tri("클러스"), tri("러스터")}},
		{"Consul클러스터", []string{"consul", tri("클러스"), tri("러스터")}},
		{`"커넥션 풀 고갈"`, []string{tri("커넥션"), "", "풀", "고갈"}},
		// Across words: the bigrams of a phrase stand in a row there too.
		{`"가나 나다"`, []string{tri("가나다")}},
		{`"가나 다라"`, []string{"가나", "다라"}},
	}
	for _, c := range cases {
		cl, err := parse(c.query)
		if err != nil {
			t.Fatal(err)
		}
		ts := terms(cl[0].text)
		got := findTerms(ts)
		if !slices.Equal(got, c.want) {
			t.Errorf("%s: terms %q, find %q, want %q", c.query, ts, got, c.want)
		}
		if len(got) > 0 && &got[0] == &ts[0] && !slices.Equal(ts, c.want) {
			t.Errorf("%s: findTerms changed the phrase's own terms", c.query)
		}
	}
}

// TestTrigramsFindWhatBigramsFind indexes Korean text where bigrams stand
// in a row and where they do not, and checks that a clause reading
// trigrams matches, counts and scores exactly as the bigram phrase it
// stands for (eval reads the bigrams), and that trigrams count in no
// field's length.
func TestTrigramsFindWhatBigramsFind(t *testing.T) {
	incs := handMade()
	incs = append(incs,
		inc("IL-0101", "Acme", "커넥션 풀 고갈", "커넥션 커넥션 풀이 고갈되었다", "커넥션풀을 키운다"),
		inc("IL-0102", "Acme", "커넥 션", "넥션 커넥 따로", "커넥션"),
		inc("IL-0103", "Acme", "데이터베이스 장애", "데이터 베이스", "데이터베이스"),
		inc("IL-0104", "Acme", "가나 나다", "가나다라마", "라마 가나"),
	)
	db := searchStore(t, incs)
	x := mustOpen(t, db)
	m := x.mem

	for _, q := range []string{"커넥션", "커넥션풀", `"커넥션 풀"`, "넥션", "데이터베이스", "데이터베", "가나다", "가나다라마", "나다", "title:커넥션", "lessons:데이터베이스", "커넥션 -고갈", "풀 -커넥션", "풀 -\"커넥션풀\"", "Redis 커넥션"} {
		clauses, err := parse(q)
		if err != nil {
			t.Fatal(err)
		}
		c, err := compile(clauses, "", nil)
		if err != nil {
			t.Fatal(err)
		}
		ev := eval(m, c, nil)
		want, wantTotal, wantSet := ev.top(0, 100), ev.total, ev.set()
		ev.release()
		got, total := topK(m, c, nil, 0, 100)
		if total != wantTotal || !slices.Equal(got, want) {
			t.Errorf("%q: trigrams found %d %+v, bigrams %d %+v", q, total, got, wantTotal, want)
		}
		if gotSet := roaring.BitmapOf(matchNums(m, c, nil)...); !gotSet.Equals(wantSet) {
			t.Errorf("%q: match set %v, bigrams %v", q, gotSet, wantSet)
		}
	}
	// The trigrams are there, and are what the clauses read.
	c, _ := compile([]clause{{text: "커넥션"}}, "", nil)
	if f := c.must[0].find; len(f) != 1 || !strings.HasPrefix(f[0], trigramMark) {
		t.Fatalf("커넥션 reads %q, not one trigram", f)
	}
	if ids := ids(t, x, "커넥션"); !sameSet(ids, []string{"IL-0007", "IL-0101", "IL-0102"}) {
		t.Errorf("커넥션 found %v", ids)
	}
	if ids := ids(t, x, "title:커넥션"); !slices.Contains(ids, "IL-0101") || slices.Contains(ids, "IL-0102") {
		t.Errorf("title:커넥션 found %v (커넥 션 is not 커넥션)", ids)
	}
	n := 0
	for term := range m.postings {
		if strings.HasPrefix(term, trigramMark) {
			n++
		}
	}
	if n == 0 {
		t.Fatal("the index holds no trigram")
	}
	// Field lengths are the analyzed terms' counts.
	for _, in := range incs {
		num, _ := incidentlib.ParseID(in.ID)
		s, ok := m.byNum[num]
		if !ok {
			t.Fatalf("%s is not indexed", in.ID)
		}
		var want [numIFields]uint32
		for fi := range fields {
			f := &fields[fi]
			want[f.index] += uint32(len(analyze(f.text(in))))
		}
		for f := range want {
			if m.lens[f][s] != want[f] {
				t.Errorf("%s: field %d has length %d, its terms are %d", in.ID, f, m.lens[f][s], want[f])
			}
		}
	}
}
