package importer

import (
	"encoding/json"
	"os"
	"path/filepath"
	"regexp"
	"strings"

	"github.com/incidentlib/incidentlib"
)

// collection is the published collection a file belongs to, read from the
// SOURCE.txt and LICENSE files in the file's folder or a folder above it.
type collection struct {
	Name    string // "icco", "dfds", "macintux", or the folder name
	Repo    string // "github.com/icco/postmortems"
	Commit  string // 40 hex digits, or ""
	Date    string // date of the commit as SOURCE.txt gives it
	Root    string // folder holding SOURCE.txt (or the file's folder)
	Licence string // SPDX id, or "NOASSERTION"
}

// sourceRE matches SOURCE.txt: "github.com/OWNER/REPO @ COMMIT (DATE)".
var sourceRE = regexp.MustCompile(`^\s*((?:https?://)?([a-z0-9.-]+\.[a-z]{2,})/([A-Za-z0-9_.-]+)/([A-Za-z0-9_.-]+?))(?:\.git)?/?\s*(?:@\s*([0-9a-fA-F]{7,40}))?\s*(?:\(([^)]*)\))?\s*$`)

// parseSource reads the first line of a SOURCE.txt.
func parseSource(data []byte) (repo, owner, commit, date string, ok bool) {
	line, _, _ := strings.Cut(string(data), "\n")
	m := sourceRE.FindStringSubmatch(line)
	if m == nil {
		return "", "", "", "", false
	}
	repo = strings.TrimPrefix(strings.TrimPrefix(m[1], "https://"), "http://")
	return repo, m[3], strings.ToLower(m[5]), m[6], true
}

// detectLicence names the licence of a LICENSE file's text in SPDX terms.
func detectLicence(data []byte) string {
	// The licence's name is in its first lines; GPL-3.0 itself mentions the
	// Affero licence further down.
	head := data
	if len(head) > 600 {
		head = head[:600]
	}
	s := strings.ToUpper(string(head))
	switch {
	case strings.Contains(s, "GNU AFFERO GENERAL PUBLIC LICENSE"):
		return "AGPL-3.0"
	case strings.Contains(s, "GNU LESSER GENERAL PUBLIC LICENSE"):
		return "LGPL"
	case strings.Contains(s, "GNU GENERAL PUBLIC LICENSE") && strings.Contains(s, "VERSION 3"):
		return "GPL-3.0"
	case strings.Contains(s, "GNU GENERAL PUBLIC LICENSE") && strings.Contains(s, "VERSION 2"):
		return "GPL-2.0"
	case strings.Contains(s, "MIT LICENSE") || strings.Contains(s, "PERMISSION IS HEREBY GRANTED, FREE OF CHARGE"):
		return "MIT"
	case strings.Contains(s, "APACHE LICENSE") && strings.Contains(s, "VERSION 2.0"):
		return "Apache-2.0"
	case strings.Contains(s, "ATTRIBUTION 4.0 INTERNATIONAL"):
		return "CC-BY-4.0"
	case strings.Contains(s, "CC0"):
		return "CC0-1.0"
	}
	return ""
}

// collectionFor finds the collection of the file at path: the nearest
// folder, at most three levels up, that holds a SOURCE.txt; the file's own
// folder otherwise.
func (l *loader) collectionFor(path string) *collection {
	dir := filepath.Dir(path)
	if c, ok := l.colls[dir]; ok {
		return c
	}
	c := &collection{Root: dir}
	d := dir
	for range 4 {
		if data, err := os.ReadFile(filepath.Join(d, "SOURCE.txt")); err == nil {
			if repo, owner, commit, date, ok := parseSource(data); ok {
				c = &collection{Name: strings.ToLower(owner), Repo: repo, Commit: commit, Date: date, Root: d}
			} else {
				c = &collection{Root: d}
			}
			break
		}
		parent := filepath.Dir(d)
		if parent == d {
			break
		}
		d = parent
	}
	for _, name := range []string{"LICENSE", "LICENSE.md", "LICENSE.txt", "LICENCE", "COPYING"} {
		if data, err := os.ReadFile(filepath.Join(c.Root, name)); err == nil {
			c.Licence = detectLicence(data)
			break
		}
	}
	if c.Licence == "" {
		c.Licence = l.opts.Licence
	}
	if c.Licence == "" {
		c.Licence = "NOASSERTION"
	}
	if c.Name == "" {
		c.Name = Slugify(filepath.Base(c.Root))
	}
	if l.opts.Collection != "" {
		c.Name = l.opts.Collection
	}
	if c.Name == "" {
		c.Name = "import"
	}
	l.colls[dir] = c
	return c
}

// rel returns path relative to the collection root, with slashes.
func (c *collection) rel(path string) string {
	r, err := filepath.Rel(c.Root, path)
	if err != nil || strings.HasPrefix(r, "..") {
		r = filepath.Base(path)
	}
	return filepath.ToSlash(r)
}

// attribution is the credit line put on every record of the collection.
func (c *collection) attribution() string {
	if c.Repo == "" {
		return c.Name
	}
	s := c.Name + ", " + c.Repo
	if c.Commit != "" {
		s += " at " + c.Commit
	}
	return s
}

// fileURL is a link to the file in the collection's repository at its
// commit, or "" when the repository is not on GitHub or not known.
func (c *collection) fileURL(rel string) string {
	if !strings.HasPrefix(c.Repo, "github.com/") {
		return ""
	}
	ref := c.Commit
	if ref == "" {
		ref = "HEAD"
	}
	segs := strings.Split(rel, "/")
	for i, s := range segs {
		segs[i] = escapePathSegment(s)
	}
	return "https://" + c.Repo + "/blob/" + ref + "/" + strings.Join(segs, "/")
}

// escapePathSegment percent-escapes one path segment for a URL.
func escapePathSegment(s string) string {
	var b strings.Builder
	for i := 0; i < len(s); i++ {
		ch := s[i]
		if ('a' <= ch && ch <= 'z') || ('A' <= ch && ch <= 'Z') || ('0' <= ch && ch <= '9') || strings.IndexByte("-._~!$&'()*+,;=:@", ch) >= 0 {
			b.WriteByte(ch)
			continue
		}
		const hex = "0123456789ABCDEF"
		b.WriteByte('%')
		b.WriteByte(hex[ch>>4])
		b.WriteByte(hex[ch&15])
	}
	return b.String()
}

// finishRecord completes a record converted from a collection's format:
// the values its tags did not map and their warnings, severity "unknown"
// where the taxonomy has it, the warnings of fitting its texts, and its
// provenance.
func (l *loader) finishRecord(rec *Record, tags *tagSet, fit *textFitter, c *collection) {
	var w []string
	rec.Unmapped, w = tags.finish()
	rec.Warnings = append(rec.Warnings, w...)
	l.terms.severityUnknown(rec.Incident)
	rec.Warnings = append(rec.Warnings, fit.warnings...)
	provenance(rec, c)
}

// provenance sets the licence, attribution and source key on a record of a
// collection format.
func provenance(rec *Record, c *collection) {
	setExtra(rec.Incident, "licence", c.Licence)
	setExtra(rec.Incident, "attribution", c.attribution())
	setExtra(rec.Incident, "source_key", rec.SourceKey)
}

// setExtra stores v as JSON in the record's Extra under name.
func setExtra(inc *incidentlib.Incident, name string, v any) {
	b, err := json.Marshal(v)
	if err != nil {
		return
	}
	if inc.Extra == nil {
		inc.Extra = incidentlib.Extra{}
	}
	inc.Extra[name] = b
}
