package importer

import (
	"bytes"
	"encoding/json"
	"fmt"
	"regexp"
	"sort"
	"strings"
	"time"

	"github.com/incidentlib/incidentlib"
)

// listEntry is one entry of a macintux JSON list.
type listEntry struct {
	URL      string   `json:"url"`
	Domain   string   `json:"domain"`
	Date     string   `json:"date"`
	Keywords []string `json:"keywords"`
}

// parseJSONList reads a JSON list of {url, domain, date, keywords}.
func (l *loader) parseJSONList(f *file) ([]Record, []Problem) {
	data := f.Data
	dec := json.NewDecoder(bytes.NewReader(data))
	tok, err := dec.Token()
	if err != nil {
		return nil, []Problem{jsonProblem(f, data, 0, err)}
	}
	if d, ok := tok.(json.Delim); !ok || d != '[' {
		return nil, []Problem{{Where: f.Path + ":1", Reason: "not a JSON list: expected an array of {url, domain, date, keywords}"}}
	}
	var recs []Record
	var probs []Problem
	for i := 0; dec.More(); i++ {
		start := int(dec.InputOffset())
		var raw json.RawMessage
		if err := dec.Decode(&raw); err != nil {
			return recs, append(probs, jsonProblem(f, data, 0, err))
		}
		start += bytes.IndexByte(data[start:], raw[0])
		where := fmt.Sprintf("%s:%d [%d]", f.Path, lineOf(data, start), i)
		if err := checkJSONDuplicateKeys(raw); err != nil {
			p := jsonProblem(f, data, start, err)
			p.Where += fmt.Sprintf(" [%d]", i)
			probs = append(probs, p)
			continue
		}
		rec, prob := l.listRecord(f, raw, where)
		if prob != nil {
			probs = append(probs, *prob)
			continue
		}
		recs = append(recs, rec)
	}
	if _, err := dec.Token(); err != nil {
		probs = append(probs, jsonProblem(f, data, 0, err))
	} else if rest := bytes.TrimSpace(data[dec.InputOffset():]); len(rest) > 0 {
		probs = append(probs, Problem{Where: fmt.Sprintf("%s:%d", f.Path, lineOf(data, int(dec.InputOffset()))), Reason: "unexpected data after the JSON list"})
	}
	if len(recs) == 0 && len(probs) == 0 {
		probs = append(probs, Problem{Where: f.Path, Reason: "empty list: no records"})
	}
	return recs, probs
}

func (l *loader) listRecord(f *file, raw json.RawMessage, where string) (Record, *Problem) {
	var members map[string]json.RawMessage
	if err := json.Unmarshal(raw, &members); err != nil {
		return Record{}, &Problem{Where: where, Reason: "not a JSON object"}
	}
	var e listEntry
	if err := json.Unmarshal(raw, &e); err != nil {
		// keywords may be one string "a, b c", as the collection's script accepts.
		var alt struct {
			listEntry
			Keywords string `json:"keywords"`
		}
		if err2 := json.Unmarshal(raw, &alt); err2 != nil {
			return Record{}, &Problem{Where: where, Reason: "malformed entry: " + err.Error()}
		}
		e = alt.listEntry
		e.Keywords = strings.FieldsFunc(alt.Keywords, func(r rune) bool { return r == ',' || r == ' ' })
	}
	u := strings.TrimSpace(e.URL)
	if u == "" {
		return Record{}, &Problem{Where: where, Reason: "url is required"}
	}
	if why := incidentlib.ValidHTTPURL(u); why != "" {
		return Record{}, &Problem{Where: where, ID: u, Reason: "url " + why}
	}
	norm := NormalizeURL(u)
	rec := Record{SourceKey: f.Coll.Name + "/" + norm, Where: where}
	inc := &incidentlib.Incident{Review: incidentlib.Review{WrittenBy: "import"}}
	rec.Incident = inc
	var fit textFitter
	var unknown []string
	for k := range members {
		if k != "url" && k != "domain" && k != "date" && k != "keywords" {
			unknown = append(unknown, k)
		}
	}
	sort.Strings(unknown)
	for _, k := range unknown {
		rec.Warnings = append(rec.Warnings, fmt.Sprintf("unknown member %q left out", k))
	}

	if d := strings.TrimSpace(e.Date); d != "" {
		t, err := incidentlib.ParseDate(d)
		if err != nil {
			return Record{}, &Problem{Where: where, ID: norm, Reason: "date " + err.Error()}
		}
		if t.After(l.now().Add(48 * time.Hour)) {
			return Record{}, &Problem{Where: where, ID: norm, Reason: fmt.Sprintf("date %q is in the future", d)}
		}
		inc.Date, inc.DateKind = d, "incident"
	}

	domain := strings.TrimSpace(e.Domain)
	if domain == "" {
		domain = u
	}
	var known bool
	inc.Org, inc.OrgSlug, known = l.aliases.LookupDomain(domain)
	rec.OrgGuessed = !known
	inc.Org = fit.fit("org", inc.Org, incidentlib.MaxNameLen)

	var kws []string
	for _, k := range e.Keywords {
		if k = oneLine(k); k != "" {
			kws = append(kws, k)
		}
	}
	// The title names the keywords other than the organization itself.
	var about []string
	for _, k := range kws {
		if !strings.EqualFold(k, inc.Org) && !strings.EqualFold(k, inc.OrgSlug) && Slugify(k) != inc.OrgSlug {
			about = append(about, k)
		}
	}
	inc.Title.En = fit.fit("title", derivedTitle(inc.Org, strings.Join(about, ", "), inc.Date), incidentlib.MaxTitleLen)
	setExtra(inc, "title_derived", true)
	inc.Sources = []incidentlib.Source{{URL: u, Kind: "postmortem"}}

	tags := l.terms.newSet(inc)
	l.terms.add(tags, "keywords", kws)
	l.finishRecord(&rec, tags, &fit, f.Coll)
	return rec, nil
}

var (
	linkItemRE    = regexp.MustCompile(`^\s{0,3}[-*+]\s+\[([^\]]*)\]\(\s*<?([^)\s>]*)>?(?:\s+"[^"]*")?\s*\)(.*)$`)
	linkStartRE   = regexp.MustCompile(`^\s{0,3}[-*+]\s+\[`)
	inlineLinkRE  = regexp.MustCompile(`\[([^\]]*)\]\([^)]*\)`)
	leadingLinkRE = regexp.MustCompile(`^[,;]?\s*\[[^\]]*\]\(\s*<?([^)\s>]*)>?(?:\s+"[^"]*")?\s*\)`)
)

// countLinkListLines counts lines of the form "- [Name](url)...".
func countLinkListLines(text []byte) int {
	n := 0
	for _, line := range strings.Split(string(text), "\n") {
		if linkItemRE.MatchString(line) {
			n++
		}
	}
	return n
}

// parseLinkList reads a Markdown link list: "- [Org](url). Description"
// items under "#" and "##" category headings.
func (l *loader) parseLinkList(f *file) ([]Record, []Problem) {
	var recs []Record
	var probs []Problem
	heading := ""
	seen := map[string]int{}
	fence := false
	for n, line := range strings.Split(string(f.Data), "\n") {
		lineNo := n + 1
		t := strings.TrimSpace(line)
		if strings.HasPrefix(t, "```") || strings.HasPrefix(t, "~~~") {
			fence = !fence
			continue
		}
		if fence {
			continue
		}
		if m := headingRE.FindStringSubmatch(line); m != nil {
			heading = cleanMarkdown(oneLine(inlineLinkRE.ReplaceAllString(m[2], "$1")))
			continue
		}
		m := linkItemRE.FindStringSubmatch(line)
		if m == nil {
			if linkStartRE.MatchString(line) && strings.Contains(line, "](") {
				probs = append(probs, Problem{Where: fmt.Sprintf("%s:%d", f.Path, lineNo), Reason: "malformed link item: expected \"- [Org](url). Description\""})
			}
			continue
		}
		where := fmt.Sprintf("%s:%d", f.Path, lineNo)
		name, u, rest := oneLine(m[1]), strings.TrimSpace(m[2]), m[3]
		if why := incidentlib.ValidHTTPURL(u); why != "" {
			probs = append(probs, Problem{Where: where, ID: name, Reason: "link " + why})
			continue
		}
		norm := NormalizeURL(u)
		if prev, dup := seen[norm]; dup {
			probs = append(probs, Problem{Where: where, ID: norm, Reason: fmt.Sprintf("the same postmortem as line %d", prev)})
			continue
		}
		seen[norm] = lineNo
		desc := strings.TrimSpace(rest)
		// Links right after the first are more accounts of the same incident.
		var more []string
		for {
			m := leadingLinkRE.FindStringSubmatch(desc)
			if m == nil {
				break
			}
			if incidentlib.ValidHTTPURL(m[1]) == "" && len(more) < incidentlib.MaxListLen-1 {
				more = append(more, m[1])
			}
			desc = strings.TrimSpace(desc[len(m[0]):])
		}
		desc = strings.TrimLeft(desc, ".,:;–—- ")
		desc = cleanMarkdown(inlineLinkRE.ReplaceAllString(desc, "$1"))
		desc = strings.TrimSpace(strings.Trim(desc, "*_"))

		rec := Record{SourceKey: f.Coll.Name + "/" + norm, Where: where}
		inc := &incidentlib.Incident{Review: incidentlib.Review{WrittenBy: "import"}}
		rec.Incident = inc
		var fit textFitter
		orgName := cleanMarkdown(name)
		if orgName == "" {
			orgName = u
		}
		inc.Org, inc.OrgSlug, rec.OrgGuessed = l.resolveOrg(orgName)
		inc.Org = fit.fit("org", inc.Org, incidentlib.MaxNameLen)
		title := firstSentence(desc)
		if title == "" {
			title = derivedTitle(inc.Org, "", "")
			setExtra(inc, "title_derived", true)
		}
		inc.Title.En = fit.fit("title", title, incidentlib.MaxTitleLen)
		inc.Summary.En = fit.fit("summary", desc, incidentlib.MaxTextLen)
		inc.Sources = []incidentlib.Source{{URL: u, Kind: "postmortem"}}
		for _, m := range more {
			if NormalizeURL(m) != norm {
				inc.Sources = append(inc.Sources, incidentlib.Source{URL: m, Kind: "postmortem"})
			}
		}
		tags := l.terms.newSet(inc)
		if heading != "" {
			l.terms.add(tags, "heading", []string{heading})
		}
		l.finishRecord(&rec, tags, &fit, f.Coll)
		recs = append(recs, rec)
	}
	if len(recs) == 0 && len(probs) == 0 {
		probs = append(probs, Problem{Where: f.Path, Reason: "no link items \"- [Org](url). Description\""})
	}
	return recs, probs
}
