package importer

import (
	"bytes"
	_ "embed"
	"encoding/json"
	"fmt"
	"hash/fnv"
	"net/url"
	"strings"
	"sync"
	"unicode/utf8"

	"github.com/incidentlib/incidentlib"
)

//go:embed org_aliases.json
var orgAliasesJSON []byte

// OrgAliases maps the spellings of organizations (names and web domains)
// onto one display name and slug.
type OrgAliases struct {
	// Notes say how the table was decided.
	Notes []string
	// Orgs are the organizations, in file order.
	Orgs    []OrgAlias
	names   map[string]*OrgAlias // folded spelling -> org
	domains map[string]*OrgAlias // lowercase domain -> org
}

// OrgAlias is one organization of the alias table.
type OrgAlias struct {
	Slug    string   `json:"slug"`
	Name    string   `json:"name"`
	Aliases []string `json:"aliases"`
	Domains []string `json:"domains"`
}

var (
	defaultAliasesOnce sync.Once
	defaultAliases     *OrgAliases
)

// DefaultOrgAliases returns the reviewed table embedded in the package
// (org_aliases.json).
func DefaultOrgAliases() *OrgAliases {
	defaultAliasesOnce.Do(func() {
		a, err := LoadOrgAliases(orgAliasesJSON)
		if err != nil {
			panic("importer: embedded org_aliases.json: " + err.Error())
		}
		defaultAliases = a
	})
	return defaultAliases
}

// LoadOrgAliases reads an alias table: {"notes": [...] or "...", "orgs":
// [{"slug", "name", "aliases": [...], "domains": [...]}]}. It returns an
// EINVALID error for a malformed table, a bad slug, a duplicate slug, or a
// spelling or domain given to two organizations.
func LoadOrgAliases(data []byte) (*OrgAliases, error) {
	if err := checkJSONDuplicateKeys(data); err != nil {
		return nil, incidentlib.Errorf(incidentlib.EINVALID, "org aliases: %v", err)
	}
	var f struct {
		Notes json.RawMessage `json:"notes"`
		Orgs  []OrgAlias      `json:"orgs"`
	}
	dec := json.NewDecoder(bytes.NewReader(data))
	dec.DisallowUnknownFields()
	if err := dec.Decode(&f); err != nil {
		return nil, incidentlib.Errorf(incidentlib.EINVALID, "org aliases: %v", err)
	}
	a := &OrgAliases{Orgs: f.Orgs, names: map[string]*OrgAlias{}, domains: map[string]*OrgAlias{}}
	if len(f.Notes) > 0 && string(f.Notes) != "null" {
		var one string
		if err := json.Unmarshal(f.Notes, &one); err == nil {
			a.Notes = []string{one}
		} else if err := json.Unmarshal(f.Notes, &a.Notes); err != nil {
			return nil, incidentlib.Errorf(incidentlib.EINVALID, "org aliases: notes must be a string or a list of strings")
		}
	}
	slugs := map[string]bool{}
	for i := range a.Orgs {
		o := &a.Orgs[i]
		if !incidentlib.ValidSlug(o.Slug) {
			return nil, incidentlib.Errorf(incidentlib.EINVALID, "org aliases: org %d: %q is not a slug", i, o.Slug)
		}
		if slugs[o.Slug] {
			return nil, incidentlib.Errorf(incidentlib.EINVALID, "org aliases: slug %q is listed twice", o.Slug)
		}
		slugs[o.Slug] = true
		if strings.TrimSpace(o.Name) == "" || utf8.RuneCountInString(o.Name) > incidentlib.MaxNameLen {
			return nil, incidentlib.Errorf(incidentlib.EINVALID, "org aliases: %s: name must have 1 to %d characters", o.Slug, incidentlib.MaxNameLen)
		}
		for _, s := range append([]string{o.Name, o.Slug}, o.Aliases...) {
			k := foldName(s)
			if k == "" {
				return nil, incidentlib.Errorf(incidentlib.EINVALID, "org aliases: %s: empty alias", o.Slug)
			}
			if other := a.names[k]; other != nil && other != o {
				return nil, incidentlib.Errorf(incidentlib.EINVALID, "org aliases: %q is an alias of both %s and %s", s, other.Slug, o.Slug)
			}
			a.names[k] = o
		}
		for _, d := range o.Domains {
			k := normalizeHost(d)
			if k == "" || !strings.Contains(k, ".") {
				return nil, incidentlib.Errorf(incidentlib.EINVALID, "org aliases: %s: %q is not a domain", o.Slug, d)
			}
			if other := a.domains[k]; other != nil && other != o {
				return nil, incidentlib.Errorf(incidentlib.EINVALID, "org aliases: domain %q belongs to both %s and %s", d, other.Slug, o.Slug)
			}
			a.domains[k] = o
		}
	}
	return a, nil
}

// Resolve returns the display name and slug of the organization spelled
// name: a name or alias of the table (compared without case, surrounding
// quotes or repeated spaces); else, for a URL or a name that is a web
// domain, the organization whose domain is its host or a parent domain of
// it; else the spelling itself (for a URL, its host without "www.") and
// its Slugify. display is "" for an empty name.
func (a *OrgAliases) Resolve(name string) (display string, slug string) {
	display, slug, _ = a.Lookup(name)
	return display, slug
}

// Lookup is Resolve that also says whether the table knew the name.
func (a *OrgAliases) Lookup(name string) (display string, slug string, known bool) {
	name = strings.TrimSpace(strings.Trim(strings.TrimSpace(name), `"'`))
	if name == "" {
		return "", "", false
	}
	if a != nil {
		if o := a.names[foldName(name)]; o != nil {
			return o.Name, o.Slug, true
		}
	}
	if strings.Contains(name, "://") {
		return a.LookupDomain(name)
	}
	if !strings.ContainsAny(name, " /") && strings.Contains(name, ".") {
		if o := a.domain(normalizeHost(name)); o != nil {
			return o.Name, o.Slug, true
		}
	}
	display = oneLine(name)
	if t, cut := truncate(display, incidentlib.MaxNameLen); cut {
		display = t
	}
	return display, Slugify(display), false
}

// LookupDomain resolves a web domain or URL: the organization whose domain
// is the host or a parent domain of it, else the host without "www." and
// its Slugify.
func (a *OrgAliases) LookupDomain(domainOrURL string) (display string, slug string, known bool) {
	host := strings.TrimSpace(domainOrURL)
	if strings.Contains(host, "://") {
		u, err := url.Parse(host)
		if err != nil || u.Hostname() == "" {
			return a.Lookup(strings.ReplaceAll(host, "://", " "))
		}
		host = u.Hostname()
	}
	host = normalizeHost(host)
	if host == "" {
		return "", "", false
	}
	if o := a.domain(host); o != nil {
		return o.Name, o.Slug, true
	}
	display, _ = truncate(oneLine(host), incidentlib.MaxNameLen)
	return display, Slugify(display), false
}

// domain finds the organization of host or of its nearest parent domain.
func (a *OrgAliases) domain(host string) *OrgAlias {
	if a == nil {
		return nil
	}
	for d := host; strings.Contains(d, "."); {
		if o := a.domains[d]; o != nil {
			return o
		}
		_, d, _ = strings.Cut(d, ".")
	}
	return nil
}

// foldName is the form names are compared in: lower case, single spaces.
func foldName(s string) string {
	s = strings.Trim(strings.TrimSpace(s), `"'`)
	return strings.ToLower(oneLine(s))
}

// normalizeHost lower-cases a host and drops "www." and a trailing dot.
func normalizeHost(h string) string {
	h = strings.ToLower(strings.TrimSpace(h))
	h = strings.TrimSuffix(h, ".")
	return strings.TrimPrefix(h, "www.")
}

// latin maps accented Latin letters onto ASCII for slugs.
var latin = map[rune]string{
	'à': "a", 'á': "a", 'â': "a", 'ã': "a", 'ä': "a", 'å': "a", 'ā': "a", 'ă': "a", 'ą': "a",
	'æ': "ae", 'ç': "c", 'ć': "c", 'č': "c", 'ď': "d", 'đ': "d", 'ð': "d",
	'è': "e", 'é': "e", 'ê': "e", 'ë': "e", 'ē': "e", 'ė': "e", 'ę': "e", 'ě': "e",
	'ì': "i", 'í': "i", 'î': "i", 'ï': "i", 'ī': "i", 'į': "i", 'ı': "i",
	'ł': "l", 'ľ': "l", 'ñ': "n", 'ń': "n", 'ň': "n",
	'ò': "o", 'ó': "o", 'ô': "o", 'õ': "o", 'ö': "o", 'ø': "o", 'ō': "o", 'ő': "o", 'œ': "oe",
	'ř': "r", 'ś': "s", 'š': "s", 'ş': "s", 'ß': "ss", 'ť': "t", 'ţ': "t", 'þ': "th",
	'ù': "u", 'ú': "u", 'û': "u", 'ü': "u", 'ū': "u", 'ů': "u", 'ű': "u", 'ų': "u",
	'ý': "y", 'ÿ': "y", 'ź': "z", 'ż': "z", 'ž': "z",
}

// Slugify turns an organization name into a slug: lower-case ASCII
// letters and digits in hyphen-separated words, at most 100 characters.
// Accented Latin letters lose their accents, "&" is "and", apostrophes are
// dropped ("King's" is "kings") and every other character separates
// words. A non-empty name with no letters or digits that can be kept (a
// name in Hangul, say) gets "org-" and eight hex digits of its hash, so
// that it still has a stable slug. An empty name gives "".
func Slugify(name string) string {
	name = strings.TrimSpace(name)
	if name == "" {
		return ""
	}
	var b strings.Builder
	hyphen := false
	word := func(s string) {
		if hyphen && b.Len() > 0 {
			b.WriteByte('-')
		}
		hyphen = false
		b.WriteString(s)
	}
	for _, r := range strings.ToLower(name) {
		switch {
		case 'a' <= r && r <= 'z', '0' <= r && r <= '9':
			word(string(r))
		case r == '\'' || r == '’' || r == '`':
			// dropped inside words
		case r == '&':
			hyphen = true
			word("and")
			hyphen = true
		default:
			if s, ok := latin[r]; ok {
				word(s)
			} else {
				hyphen = true
			}
		}
	}
	s := b.String()
	for len(s) > 100 {
		i := strings.LastIndexByte(s[:100], '-')
		if i <= 0 {
			s = s[:100]
			break
		}
		s = s[:i]
	}
	s = strings.Trim(s, "-")
	if s == "" {
		h := fnv.New32a()
		h.Write([]byte(name))
		return fmt.Sprintf("org-%08x", h.Sum32())
	}
	return s
}
