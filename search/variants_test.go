package search

import (
	"github.com/incidentlib/incidentlib"
	"slices"
	"testing"
)

func TestCompoundsFindEachOther(t *testing.T) {
	db := searchStore(t, []*incidentlib.Incident{
		inc("IL-0001", "Acme", "Clients kept no keep-alive connections", "Every request opened a connection.", ""),
		inc("IL-0002", "Globex", "The agent had keepAlive off by default", "Each call made a new TLS handshake.", ""),
		inc("IL-0003", "Initech", "Keep alive probes were disabled", "Idle connections were dropped by the load balancer.", ""),
		inc("IL-0004", "Hooli", "Time out of the leader lease", "We keep the lease alive.", ""),
		inc("IL-0005", "Umbrella", "커넥션 풀이 고갈되어 요청이 멈췄다", "커넥션 풀 크기를 8 로 두었다.", ""),
		inc("IL-0006", "Vandelay", "커넥션풀 설정이 빠졌다", "애플리케이션이 커넥션풀을 쓰지 않았다.", ""),
		inc("IL-0007", "Soylent", "풀 요청이 몰렸다", "커넥션 수가 늘었다.", ""),
	})
	x := mustOpen(t, db)
	cases := []struct {
		name, query string
		want        []string
	}{
		{"Hyphenated", "keep-alive", []string{"IL-0001", "IL-0002", "IL-0003"}},
		{"Joined", "keepalive", []string{"IL-0001", "IL-0002", "IL-0003"}},
		{"SpacedPhrase", `"keep alive"`, []string{"IL-0001", "IL-0002", "IL-0003"}},
		{"HyphenatedPhrase", `"keep-alive"`, []string{"IL-0001", "IL-0002", "IL-0003"}},
		{"JoinedInTitleOnly", "title:keepalive", []string{"IL-0001", "IL-0002", "IL-0003"}},
		{"ExcludedJoined", "connections -keepalive", []string{}},
		{"SpacedWordsStillApart", "keep alive", []string{"IL-0001", "IL-0003", "IL-0004"}},
		{"KoreanJoinedFindsSpaced", "커넥션풀", []string{"IL-0005", "IL-0006"}},
		{"KoreanSpacedFindsJoined", "커넥션 풀", []string{"IL-0005", "IL-0006", "IL-0007"}}, // words anywhere, as before
		{"KoreanSpacedPhraseFindsJoined", `"커넥션 풀"`, []string{"IL-0005", "IL-0006"}},
		{"KoreanJoinedFindsSpacedWithParticle", "커넥션풀이", []string{"IL-0005"}},
		{"KoreanNotInsideANoun", "넥션", []string{"IL-0005", "IL-0006", "IL-0007"}},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			if got := ids(t, x, c.query); !sameSet(got, c.want) {
				t.Errorf("%q found %v, want %v", c.query, got, c.want)
			}
		})
	}
	t.Run("HighlightsTheSpellingFound", func(t *testing.T) {
		for _, h := range run(t, x, "keepalive").Hits {
			if len(h.Highlights) == 0 {
				t.Errorf("%s: no highlight", h.ID)
			}
		}
	})
}

func TestSuggestions(t *testing.T) {
	db := searchStore(t, []*incidentlib.Incident{
		inc("IL-0001", "Acme", "Consul leader election stalled", "The leader lost its lease.", ""),
		inc("IL-0002", "Globex", "Certificate expired", "A certificate on the load balancer expired.", ""),
		inc("IL-0003", "Initech", "Consul cluster lost quorum", "Two servers failed.", ""),
		inc("IL-0004", "Hooli", "Idle connections dropped", "The load balancer sent no Keepalive.", ""),
	})
	x := mustOpen(t, db)
	cases := []struct {
		name, query string
		want        []string
	}{
		{"LetterChanged", "consol", []string{"consul"}},
		{"LetterLeftOut", "certficate", []string{"certificate"}},
		{"LetterAdded", "leaader", []string{"leader"}},
		{"LettersSwapped", "elcetion", []string{"election"}},
		{"OtherWordsKept", "consol quorum", []string{"consul quorum"}},
		{"CorrectionMustFindSomething", "consol certificate", []string{}},
		{"TwoWordsOff", "consol qourum", []string{"consul quorum"}},
		{"PrefixKept", "title:elcetion", []string{"title:election"}},
		{"NoneForAKnownWord", "consul certificate", []string{}},
		{"NoneForKorean", "커넥션", []string{}},
		// keepale and keepalive are one term: the suggestion is the word
		// the library wrote, not the first candidate that made the term.
		{"WordAsWritten", "keepalve", []string{"keepalive"}},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			p := run(t, x, c.query)
			if p.TotalCount != 0 {
				t.Fatalf("%q found %d incidents", c.query, p.TotalCount)
			}
			if p.Suggestions == nil || !slices.Equal(p.Suggestions, c.want) {
				t.Errorf("%q suggested %q, want %q", c.query, p.Suggestions, c.want)
			}
		})
	}
	t.Run("NoneWhenSomethingMatches", func(t *testing.T) {
		p := run(t, x, "consul")
		if p.TotalCount == 0 || p.Suggestions == nil || len(p.Suggestions) != 0 {
			t.Errorf("consul: %d found, suggestions %q", p.TotalCount, p.Suggestions)
		}
	})
}
