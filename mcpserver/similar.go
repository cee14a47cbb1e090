package mcpserver

import (
	"context"
	"fmt"
	"slices"
	"strings"
	"unicode"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/incidentlib/incidentlib"
)

// SimilarArgs are similar_incidents' arguments: exactly one of ID and
// Description.
type SimilarArgs struct {
	ID          string `json:"id,omitempty" jsonschema:"an incident of the library, such as IL-0213"`
	Description string `json:"description,omitempty" jsonschema:"free text about what is happening now, at most 2000 characters, such as: checkout errors after a config rollout, database replication lag"`
	Lang        Lang   `json:"lang,omitempty"`
	First       int    `json:"first,omitempty" jsonschema:"how many incidents to return, 1 to 20 (default 5)"`
}

// SimilarHit is an incident similar_incidents found.
type SimilarHit struct {
	Incident     IncidentBrief `json:"incident"`
	Via          string        `json:"via" jsonschema:"text: it holds words of the description; terms: it shares taxonomy terms with the incident compared"`
	Score        float64       `json:"score" jsonschema:"for terms the library's similarity score; for text the number of the description's words it holds plus its relevance (0 to 1)"`
	SharedTerms  []string      `json:"sharedTerms,omitempty" jsonschema:"KIND:slug of each term shared"`
	MatchedWords []string      `json:"matchedWords,omitempty"`
}

// SimilarResult is similar_incidents' structured content.
type SimilarResult struct {
	Basis     string         `json:"basis" jsonschema:"id or description"`
	Of        *IncidentBrief `json:"of,omitempty" jsonschema:"the incident compared: the one given by id, or the best text match of the description"`
	Words     []string       `json:"words,omitempty" jsonschema:"the description's words that were searched"`
	Incidents []SimilarHit   `json:"incidents"`
}

// Bounds of similar_incidents' arguments.
const (
	maxDescription = 2000 // characters
	maxWords       = 8    // searched words of a description
	maxSimilar     = 20   // incidents returned
)

// similarQuery reads the incident twice under two names, so that its
// brief decodes into a gqlBrief of its own: one read, the loaders
// answering the second.
const similarQuery = `query ($id: ID!, $lang: Lang, $first: Int) {
  of: incident(id: $id) { ...Brief }
  sim: incident(id: $id) { similar(first: $first) { score sharedTerms { kind slug } incident { ...Brief } } }
} ` + briefFields

func (t tools) similar(ctx context.Context, _ *mcp.CallToolRequest, in SimilarArgs) (*mcp.CallToolResult, SimilarResult, error) {
	id, desc := strings.TrimSpace(in.ID), strings.TrimSpace(in.Description)
	out := SimilarResult{Incidents: []SimilarHit{}}
	if (id == "") == (desc == "") {
		return nil, out, invalid("give exactly one of id (an incident) and description (free text)")
	}
	first := in.First
	if first == 0 {
		first = 5
	}
	if first < 1 || first > maxSimilar {
		return nil, out, invalid("first must be 1 to %d, got %d", maxSimilar, first)
	}
	if id == "" {
		if n := len([]rune(desc)); n > maxDescription {
			return nil, out, invalid("description is %d characters; at most %d", n, maxDescription)
		}
		words := descriptionWords(desc)
		if len(words) == 0 {
			return nil, out, invalid("description holds no word to search for")
		}
		out.Basis, out.Words = "description", words
		hits, err := t.textMatches(ctx, words, in.Lang, first)
		if err != nil {
			return nil, out, toolError(err)
		}
		out.Incidents = nonNil(hits) // an empty list, never null (the output schema)
		if len(hits) > 0 {
			best := hits[0].Incident
			out.Of, id = &best, best.ID
		}
	} else {
		out.Basis = "id"
	}
	if id != "" && len(out.Incidents) < first {
		sim, err := t.termSimilar(ctx, id, in.Lang, first)
		if err != nil {
			return nil, out, toolError(err)
		}
		if out.Of == nil {
			out.Of = &sim.of
		}
		for _, h := range sim.hits {
			if len(out.Incidents) == first {
				break
			}
			if !slices.ContainsFunc(out.Incidents, func(x SimilarHit) bool { return x.Incident.ID == h.Incident.ID }) {
				out.Incidents = append(out.Incidents, h)
			}
		}
	}
	var b strings.Builder
	if out.Basis == "description" {
		fmt.Fprintf(&b, "Searched the description's words: %s.\n", strings.Join(out.Words, ", "))
	}
	if out.Of != nil {
		fmt.Fprintf(&b, "Compared with %s %s.\n", out.Of.ID, out.Of.Title)
	}
	fmt.Fprintf(&b, "%d similar incidents.\n\n", len(out.Incidents))
	for _, h := range out.Incidents {
		writeBrief(&b, h.Incident)
		if len(h.MatchedWords) > 0 {
			fmt.Fprintf(&b, "  holds: %s\n", strings.Join(h.MatchedWords, ", "))
		}
		if len(h.SharedTerms) > 0 {
			fmt.Fprintf(&b, "  shares: %s\n", strings.Join(h.SharedTerms, ", "))
		}
	}
	return text(b.String()), out, nil
}

type termResult struct {
	of   IncidentBrief
	hits []SimilarHit
}

// termSimilar is Incident.similar of id: NOT_FOUND when there is no such
// incident.
func (t tools) termSimilar(ctx context.Context, id string, lang Lang, first int) (termResult, error) {
	var d struct {
		Of  *gqlBrief
		Sim *struct {
			Similar []struct {
				Score       float64
				SharedTerms []struct{ Kind, Slug string }
				Incident    gqlBrief
			}
		}
	}
	if err := t.exec.Query(ctx, similarQuery, map[string]any{"id": id, "lang": lang.graphQL(), "first": first}, &d); err != nil {
		return termResult{}, err
	}
	if d.Of == nil || d.Sim == nil {
		return termResult{}, incidentlib.Errorf(incidentlib.ENOTFOUND, "no incident %s in the library", id)
	}
	r := termResult{of: d.Of.brief()}
	for _, s := range d.Sim.Similar {
		h := SimilarHit{Incident: s.Incident.brief(), Via: "terms", Score: s.Score}
		for _, st := range s.SharedTerms {
			h.SharedTerms = append(h.SharedTerms, st.Kind+":"+st.Slug)
		}
		r.hits = append(r.hits, h)
	}
	return r, nil
}

// textMatches searches each word of a description (1 to maxWords words)
// in one GraphQL document (wordsQueries: an aliased search per word, so the edge counts the cost of
// all of them at once) and ranks the incidents by how many words they
// hold, then by their relevance to each word relative to the word's best
// match. The search needs every word of a query to match, so a whole
// description would rarely find anything: a word at a time, the
// incidents holding the most of them come first.
func (t tools) textMatches(ctx context.Context, words []string, lang Lang, first int) ([]SimilarHit, error) {
	vars := map[string]any{"lang": lang.graphQL(), "first": first * 2}
	for k := range words {
		vars[fmt.Sprintf("q%d", k)] = words[k]
	}
	var d map[string]struct {
		Edges []struct {
			Score float64
			Node  gqlBrief
		}
	}
	if err := t.exec.Query(ctx, wordsQueries[len(words)], vars, &d); err != nil {
		return nil, err
	}
	byID := map[string]*SimilarHit{}
	var order []*SimilarHit
	for k, w := range words {
		edges := d[fmt.Sprintf("w%d", k)].Edges
		if len(edges) == 0 {
			continue
		}
		top := edges[0].Score
		for _, e := range edges {
			h := byID[e.Node.ID]
			if h == nil {
				h = &SimilarHit{Incident: e.Node.brief(), Via: "text"}
				byID[e.Node.ID] = h
				order = append(order, h)
			}
			h.MatchedWords = append(h.MatchedWords, w)
			rel := 1.0
			if top > 0 {
				rel = e.Score / top
			}
			h.Score += 1 + rel/float64(len(words)+1) // a word held counts more than any relevance
		}
	}
	slices.SortStableFunc(order, func(a, b *SimilarHit) int {
		switch {
		case a.Score > b.Score:
			return -1
		case a.Score < b.Score:
			return 1
		}
		return strings.Compare(a.Incident.ID, b.Incident.ID)
	})
	var hits []SimilarHit
	for _, h := range order[:min(len(order), first)] {
		hits = append(hits, *h)
	}
	return hits, nil
}

// descriptionWords are the words of a description to search for, in
// their order, each once: runs of letters and digits, lower-cased,
// without English stop words and one-letter words (a Korean word of two
// letters is kept), at most maxWords.
func descriptionWords(desc string) []string {
	var words []string
	for _, w := range strings.FieldsFunc(strings.ToLower(desc), func(r rune) bool { return !unicode.IsLetter(r) && !unicode.IsDigit(r) }) {
		if len([]rune(w)) < 2 || len(w) < 3 && !hasHangul(w) || stopWords[w] || slices.Contains(words, w) {
			continue
		}
		words = append(words, w)
		if len(words) == maxWords {
			break
		}
	}
	return words
}

func hasHangul(s string) bool {
	return strings.IndexFunc(s, func(r rune) bool { return unicode.Is(unicode.Hangul, r) }) >= 0
}

// stopWords are English words a description holds that say nothing of
// an incident.
var stopWords = map[string]bool{}

func init() {
	for _, w := range strings.Fields(`the and for are but not you all any can had her was one our out has have his how its may new now
		see two who did get got let put say she too use with from this that they them then than there their what when where which while
		will would could should into onto over under after before about again also been being both each few more most other some such
		only own same just very were is it in on at of to by or as an be we us our my me do does done no yes so if
		seems seeing happening happened right currently lot lots many much`) {
		stopWords[w] = true
	}
}
