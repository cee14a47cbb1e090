package restapi

import (
	"encoding/xml"
	"io"
	"net/http"
	"net/url"
	"strings"
	"time"
	"unicode/utf8"

	"github.com/incidentlib/incidentlib"
)

// AtomEntries is how many incidents the feed holds: the newest by
// updated_at, whatever their age.
const AtomEntries = 50

// atomEpoch stands for a time a record does not give (or not as RFC 3339).
const atomEpoch = "1970-01-01T00:00:00Z"

// atom serves GET /feed.atom: an Atom 1.0 feed (RFC 4287) of the newest
// AtomEntries incidents the filter selects, by updated_at, one entry per
// incident: id tag:HOST:ID, updated the incident's updated_at, title and
// content (text) its title and summary in lang (en by default, ko; the
// other language when the record has none), a link to its IL-JSON at
// /api/v1/incidents/ID and a category per domain. Characters XML does
// not allow are dropped.
func (x *exports) atom(w http.ResponseWriter, r *http.Request) {
	extra := map[string]string{"lang": "en"}
	f, norm, err := parseFilter(r.URL.Query(), extra)
	if err != nil {
		x.api.writeError(w, r, err)
		return
	}
	lang := incidentlib.Lang(strings.ToUpper(extra["lang"]))
	if lang != incidentlib.LangEn && lang != incidentlib.LangKo {
		x.api.writeError(w, r, invalid("lang", "lang must be en or ko, got %q", extra["lang"]))
		return
	}
	base := x.base(r)
	u, err := url.Parse(base)
	if err != nil || u.Hostname() == "" {
		x.api.writeError(w, r, invalid("Host", "the request names no host to make the feed's links with"))
		return
	}
	host := u.Hostname()
	self := base + "/feed.atom"
	if q := r.URL.Query().Encode(); q != "" {
		self += "?" + q
	}
	order := incidentlib.IncidentOrder{Field: incidentlib.OrderUpdatedAt, Direction: incidentlib.Desc}
	key := "atom\x00" + base + "\x00" + norm
	err = x.downloads.ServeDownload(w, r, key, atomCost, "application/atom+xml; charset=utf-8", func(out io.Writer) error {
		// The feed's updated is its newest entry's: the first page is
		// read before anything is written.
		var incs []*incidentlib.Incident
		if err := x.eachIncident(r, f, order, AtomEntries, func(inc *incidentlib.Incident) error {
			incs = append(incs, inc)
			return nil
		}); err != nil {
			return err
		}
		feed := atomFeed{
			NS: "http://www.w3.org/2005/Atom", Lang: strings.ToLower(string(lang)),
			ID: xmlText(self), Title: "incidentlib: the newest incidents", Updated: atomEpoch,
			Author:    atomPerson{Name: "incidentlib"},
			Generator: "incidentlib",
			Links:     []atomLink{{Rel: "self", Type: "application/atom+xml", Href: xmlText(self)}},
		}
		for i, inc := range incs {
			updated := atomTime(inc.UpdatedAt)
			if i == 0 || updated > feed.Updated {
				feed.Updated = updated
			}
			title, summary := inc.Title.In(lang), inc.Summary.In(lang)
			if title == "" {
				title = inc.ID
			}
			e := atomEntry{
				ID: "tag:" + host + ":" + inc.ID, Title: atomContent{Type: "text", Text: xmlText(title)}, Updated: updated,
				Links:   []atomLink{{Rel: "alternate", Type: "application/json", Href: xmlText(IncidentURL(base, inc.ID))}},
				Content: &atomContent{Type: "text", Text: xmlText(summary)},
			}
			if summary == "" {
				e.Content = nil
			}
			for _, d := range inc.Domain {
				e.Categories = append(e.Categories, atomCategory{Term: xmlText(d)})
			}
			feed.Entries = append(feed.Entries, e)
		}
		if _, err := io.WriteString(out, xml.Header); err != nil {
			return err
		}
		enc := xml.NewEncoder(out)
		enc.Indent("", " ")
		if err := enc.Encode(feed); err != nil {
			return err
		}
		_, err := io.WriteString(out, "\n")
		return err
	})
	if err != nil {
		x.api.writeError(w, r, err)
	}
}

// atomTime returns an RFC 3339 time for Atom's updated: s normalized to
// UTC, or atomEpoch when s is not one.
func atomTime(s string) string {
	t, err := time.Parse(time.RFC3339Nano, s)
	if err != nil {
		return atomEpoch
	}
	return t.UTC().Format(time.RFC3339Nano)
}

// xmlText drops what XML 1.0 does not allow in a document: control
// characters but tab, newline and carriage return, surrogates, U+FFFE
// and U+FFFF (and bytes that are not UTF-8).
func xmlText(s string) string {
	ok := true
	for _, r := range s {
		if !xmlChar(r) {
			ok = false
			break
		}
	}
	if ok && utf8.ValidString(s) {
		return s
	}
	var b strings.Builder
	for i := 0; i < len(s); {
		r, n := utf8.DecodeRuneInString(s[i:])
		if !(r == utf8.RuneError && n == 1) && xmlChar(r) {
			b.WriteString(s[i : i+n])
		}
		i += n
	}
	return b.String()
}

func xmlChar(r rune) bool {
	return r == 0x9 || r == 0xA || r == 0xD || (0x20 <= r && r <= 0xD7FF) || (0xE000 <= r && r <= 0xFFFD) || (0x10000 <= r && r <= 0x10FFFF)
}

// The feed, as encoding/xml writes it.
type atomFeed struct {
	XMLName   xml.Name    `xml:"feed"`
	NS        string      `xml:"xmlns,attr"`
	Lang      string      `xml:"http://www.w3.org/XML/1998/namespace lang,attr"`
	ID        string      `xml:"id"`
	Title     string      `xml:"title"`
	Updated   string      `xml:"updated"`
	Author    atomPerson  `xml:"author"`
	Generator string      `xml:"generator"`
	Links     []atomLink  `xml:"link"`
	Entries   []atomEntry `xml:"entry"`
}

type atomPerson struct {
	Name string `xml:"name"`
}

type atomLink struct {
	Rel  string `xml:"rel,attr"`
	Type string `xml:"type,attr,omitempty"`
	Href string `xml:"href,attr"`
}

type atomEntry struct {
	ID         string         `xml:"id"`
	Title      atomContent    `xml:"title"`
	Updated    string         `xml:"updated"`
	Links      []atomLink     `xml:"link"`
	Categories []atomCategory `xml:"category"`
	Content    *atomContent   `xml:"content"`
}

type atomContent struct {
	Type string `xml:"type,attr"`
	Text string `xml:",chardata"`
}

type atomCategory struct {
	Term string `xml:"term,attr"`
}
