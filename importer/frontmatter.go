package importer

import (
	"fmt"
	"path"
	"regexp"
	"strconv"
	"strings"
	"time"
	"unicode/utf8"

	"go.yaml.in/yaml/v3"

	"github.com/incidentlib/incidentlib"
)

// frontMatter is the YAML front matter of an icco record, with the line of
// each key in the file.
type frontMatter struct {
	values map[string]string   // scalar keys
	lists  map[string][]string // categories, keywords
	lines  map[string]int
}

// iccoScalars and iccoLists are the front matter keys of icco/postmortems.
var (
	iccoScalars = map[string]bool{"uuid": true, "url": true, "archive_url": true, "title": true, "start_time": true, "end_time": true,
		"company": true, "product": true, "summary": true, "source_published_at": true, "source_fetched_at": true}
	iccoLists = map[string]bool{"categories": true, "keywords": true}
)

// splitFrontMatter splits a Markdown file into its YAML front matter and
// body. fmLine is the file line of the first front matter line.
func splitFrontMatter(data []byte) (fm string, fmLine int, body string, err error) {
	text := string(data)
	lines := strings.SplitAfter(text, "\n")
	i := 0
	for i < len(lines) && strings.TrimSpace(lines[i]) == "" {
		i++
	}
	if i == len(lines) || strings.TrimRight(lines[i], " \t\n") != "---" {
		line := i + 1
		if i == len(lines) {
			line = 1
		}
		return "", 0, "", fmt.Errorf("line %d: no front matter: the file must start with a line \"---\"", line)
	}
	open := i
	for j := open + 1; j < len(lines); j++ {
		t := strings.TrimRight(lines[j], " \t\n")
		if t == "---" || t == "..." {
			return strings.Join(lines[open+1:j], ""), open + 2, strings.Join(lines[j+1:], ""), nil
		}
	}
	return "", 0, "", fmt.Errorf("line %d: unterminated front matter: no closing \"---\" line", open+1)
}

var yamlLineRE = regexp.MustCompile(`line (\d+)`)

// parseFrontMatterYAML reads the front matter mapping. Problems name file
// lines: fmLine is the file line of the front matter's first line.
func parseFrontMatterYAML(fm string, fmLine int) (*frontMatter, error) {
	var doc yaml.Node
	if err := yaml.Unmarshal([]byte(fm), &doc); err != nil {
		msg := strings.TrimPrefix(err.Error(), "yaml: ")
		msg = yamlLineRE.ReplaceAllStringFunc(msg, func(m string) string {
			n, _ := strconv.Atoi(strings.TrimPrefix(m, "line "))
			return fmt.Sprintf("line %d", n+fmLine-1)
		})
		if !strings.HasPrefix(msg, "line ") {
			msg = fmt.Sprintf("line %d: %s", fmLine, msg)
		}
		return nil, fmt.Errorf("malformed front matter: %s", msg)
	}
	if doc.Kind == 0 || len(doc.Content) == 0 {
		return nil, fmt.Errorf("line %d: empty front matter", fmLine)
	}
	m := doc.Content[0]
	if m.Kind != yaml.MappingNode {
		return nil, fmt.Errorf("line %d: front matter is not a mapping of keys to values", m.Line+fmLine-1)
	}
	out := &frontMatter{values: map[string]string{}, lists: map[string][]string{}, lines: map[string]int{}}
	for i := 0; i+1 < len(m.Content); i += 2 {
		k, v := m.Content[i], m.Content[i+1]
		line := k.Line + fmLine - 1
		if k.Kind != yaml.ScalarNode {
			return nil, fmt.Errorf("line %d: a front matter key must be a string", line)
		}
		key := k.Value
		if prev, dup := out.lines[key]; dup {
			return nil, fmt.Errorf("line %d: duplicate key %q (first at line %d)", line, key, prev)
		}
		out.lines[key] = line
		for v.Kind == yaml.AliasNode && v.Alias != nil {
			v = v.Alias
		}
		switch v.Kind {
		case yaml.ScalarNode:
			val := v.Value
			if v.Tag == "!!null" {
				val = ""
			}
			if iccoLists[key] {
				if val != "" {
					out.lists[key] = []string{val}
				} else {
					out.lists[key] = nil
				}
				continue
			}
			out.values[key] = val
		case yaml.SequenceNode:
			var list []string
			for _, el := range v.Content {
				for el.Kind == yaml.AliasNode && el.Alias != nil {
					el = el.Alias
				}
				if el.Kind != yaml.ScalarNode {
					return nil, fmt.Errorf("line %d: %s: each entry must be a string", el.Line+fmLine-1, key)
				}
				if el.Tag != "!!null" {
					list = append(list, el.Value)
				}
			}
			if iccoScalars[key] {
				return nil, fmt.Errorf("line %d: %s must be a single value, not a list", line, key)
			}
			out.lists[key] = list
		default:
			if iccoScalars[key] || iccoLists[key] {
				return nil, fmt.Errorf("line %d: %s must be a string or a list of strings", line, key)
			}
			out.values[key] = "" // an unknown nested key: reported as unknown below
		}
	}
	return out, nil
}

// parseFrontmatter reads an icco record: YAML front matter and a body.
func (l *loader) parseFrontmatter(f *file) ([]Record, []Problem) {
	stem := strings.TrimSuffix(path.Base(f.Rel), path.Ext(f.Rel))
	fmText, fmLine, body, err := splitFrontMatter(f.Data)
	if err != nil {
		return nil, []Problem{lineProblem(f.Path, stem, err)}
	}
	fm, err := parseFrontMatterYAML(fmText, fmLine)
	if err != nil {
		return nil, []Problem{lineProblem(f.Path, stem, err)}
	}
	uuid := strings.TrimSpace(fm.values["uuid"])
	id := uuid
	if id == "" {
		id = stem
	}
	rec := Record{SourceKey: f.Coll.Name + "/" + id, Where: f.Path + ":1"}
	bad := func(key, format string, args ...any) []Problem {
		return []Problem{{Where: fmt.Sprintf("%s:%d", f.Path, fm.lines[key]), ID: id, Reason: key + ": " + fmt.Sprintf(format, args...)}}
	}
	inc := &incidentlib.Incident{Review: incidentlib.Review{WrittenBy: "import"}}
	rec.Incident = inc
	var fit textFitter

	if uuid == "" {
		rec.Warnings = append(rec.Warnings, "no uuid: the file name is the source id")
	}
	for key := range fm.lines {
		if !iccoScalars[key] && !iccoLists[key] {
			rec.Warnings = append(rec.Warnings, fmt.Sprintf("line %d: unknown front matter key %q left out", fm.lines[key], key))
		}
	}

	// Dates.
	times := map[string]time.Time{}
	for _, key := range []string{"start_time", "end_time", "source_published_at"} {
		v := strings.TrimSpace(fm.values[key])
		if v == "" {
			continue
		}
		t, err := parseTime(v)
		if err != nil {
			return nil, bad(key, "%v", err)
		}
		if dateOf(t) == "" {
			return nil, bad(key, "%q is outside the years 0000 to 9999", v)
		}
		if t.After(l.now().Add(48 * time.Hour)) {
			return nil, bad(key, "%q is in the future", v)
		}
		times[key] = t
	}
	if t, ok := times["start_time"]; ok {
		inc.Date, inc.DateKind = dateOf(t), "incident"
	} else if t, ok := times["source_published_at"]; ok {
		inc.Date, inc.DateKind = dateOf(t), "published"
	}
	start, hasStart := times["start_time"]
	end, hasEnd := times["end_time"]
	if hasStart && hasEnd {
		switch d := end.Sub(start); {
		case d < 0:
			rec.Warnings = append(rec.Warnings, fmt.Sprintf("line %d: end_time is before start_time: no resolved_after", fm.lines["end_time"]))
		case d == 0:
			rec.Warnings = append(rec.Warnings, fmt.Sprintf("line %d: end_time equals start_time: no resolved_after", fm.lines["end_time"]))
		default:
			inc.Timeline.ResolvedAfter = formatDuration(d)
		}
	}

	// Source.
	src := strings.TrimSpace(fm.values["url"])
	if src != "" {
		if why := incidentlib.ValidHTTPURL(src); why != "" {
			return nil, bad("url", "%s", why)
		}
		s := incidentlib.Source{URL: src, Kind: "postmortem"}
		if a := strings.TrimSpace(fm.values["archive_url"]); a != "" {
			if why := incidentlib.ValidHTTPURL(a); why != "" {
				rec.Warnings = append(rec.Warnings, fmt.Sprintf("line %d: archive_url %s: left out", fm.lines["archive_url"], why))
			} else {
				s.Archived = a
			}
		}
		inc.Sources = []incidentlib.Source{s}
	} else {
		rec.Warnings = append(rec.Warnings, "no url: the source is the collection's file")
		if u := f.Coll.fileURL(f.Rel); u != "" {
			inc.Sources = []incidentlib.Source{{URL: u, Kind: "collection"}}
		}
	}

	// Organization.
	company := strings.TrimSpace(fm.values["company"])
	switch {
	case company != "":
		inc.Org, inc.OrgSlug, rec.OrgGuessed = l.resolveOrg(company)
	case src != "":
		inc.Org, inc.OrgSlug, rec.OrgGuessed = l.resolveOrg(src)
		rec.Warnings = append(rec.Warnings, "no company: the organization is taken from the url")
	default:
		return nil, []Problem{{Where: f.Path + ":1", ID: id, Reason: "no company and no url: the organization is unknown"}}
	}
	inc.Org = fit.fit("org", inc.Org, incidentlib.MaxNameLen)

	// Texts.
	product := oneLine(fm.values["product"])
	summary := strings.TrimSpace(fm.values["summary"])
	body = cleanMarkdown(body)
	title := oneLine(fm.values["title"])
	if title == "" {
		// The source's own first sentence when it is short enough to be a
		// title, else the organization, product and date.
		title = firstSentence(summary)
		if title == "" {
			title = firstSentence(body)
		}
		if utf8.RuneCountInString(title) > maxDerivedTitle || utf8.RuneCountInString(title) < 20 {
			title = derivedTitle(inc.Org, product, inc.Date)
		}
		setExtra(inc, "title_derived", true)
	}
	inc.Title.En = fit.fit("title", title, incidentlib.MaxTitleLen)
	if summary == "" {
		summary = body
	} else if body != "" {
		setExtra(inc, "narrative", fit.fit("narrative", body, incidentlib.MaxTextLen))
	}
	inc.Summary.En = fit.fit("summary", summary, incidentlib.MaxTextLen)
	if product != "" {
		setExtra(inc, "product", fit.fit("product", product, incidentlib.MaxNameLen))
	}

	// Terms.
	tags := l.terms.newSet(inc)
	l.terms.add(tags, "categories", fm.lists["categories"])
	l.terms.add(tags, "keywords", fm.lists["keywords"])
	l.finishRecord(&rec, tags, &fit, f.Coll)
	return []Record{rec}, nil
}

// resolveOrg looks name (or a URL) up in the alias table.
func (l *loader) resolveOrg(name string) (display, slug string, guessed bool) {
	display, slug, known := l.aliases.Lookup(name)
	return display, slug, !known
}

// maxDerivedTitle is the longest first sentence taken as a title.
const maxDerivedTitle = 200

// derivedTitle is the English title of a record whose source has none,
// built only from what the source says.
func derivedTitle(org, product, date string) string {
	t := org + " postmortem"
	if product != "" {
		t += ": " + product
	}
	if date != "" {
		t += " (" + date + ")"
	}
	return t
}

var lineNumRE = regexp.MustCompile(`line (\d+)(: )?`)

// lineProblem turns an error that names "line N" into a problem at path:N
// whose reason no longer repeats the line.
func lineProblem(p, id string, err error) Problem {
	msg := err.Error()
	m := lineNumRE.FindStringSubmatchIndex(msg)
	if m == nil {
		return Problem{Where: p, ID: id, Reason: msg}
	}
	where := p + ":" + msg[m[2]:m[3]]
	if m[4] >= 0 {
		msg = msg[:m[0]] + msg[m[1]:]
	}
	return Problem{Where: where, ID: id, Reason: msg}
}
