package importer

import (
	"bytes"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"sort"
	"strings"
	"time"

	"github.com/incidentlib/incidentlib"
	"github.com/incidentlib/incidentlib/iljson"
)

// Format is the format of a source file.
type Format string

// The formats Load reads.
const (
	FormatILJSON        Format = "il-json"        // one IL-JSON object or an array of them
	FormatJSONL         Format = "jsonl"          // IL-JSON, one object per line
	FormatFrontmatterMD Format = "frontmatter-md" // icco/postmortems: YAML front matter and a narrative body
	FormatSectionedMD   Format = "sectioned-md"   // dfds/postmortems: Summary, Timeline, ... sections
	FormatJSONList      Format = "json-list"      // macintux/Service-postmortems: [{url, domain, date, keywords}]
	FormatLinkListMD    Format = "link-list-md"   // "- [Org](url). Description" under category headings
)

// Formats lists every format.
var Formats = []Format{FormatILJSON, FormatJSONL, FormatFrontmatterMD, FormatSectionedMD, FormatJSONList, FormatLinkListMD}

// IsValid reports whether f is a known format.
func (f Format) IsValid() bool {
	for _, x := range Formats {
		if x == f {
			return true
		}
	}
	return false
}

// Record is one incident read from a source file.
type Record struct {
	// Incident is the record. Its ID is empty for formats other than
	// IL-JSON; the store assigns one.
	Incident *incidentlib.Incident
	// SourceKey names the record stably across imports: the collection,
	// "/", and the source's own id or path, such as "icco/<uuid>",
	// "dfds/PM2021-004" or "macintux/<normalized url>".
	SourceKey string
	// Where is the file and line (or array index) the record came from.
	Where string
	// Unmapped lists the source's categories and keywords that no taxonomy
	// term matched, as "field=value" (for example "categories=cloud").
	Unmapped []string
	// OrgGuessed is true when the organization was not in the alias table
	// and was taken from the source's spelling (or domain) as it is.
	OrgGuessed bool
	// Encoded is the record as Streamer.Encode encoded it, when it is set.
	Encoded []byte
	// Warnings are things the adapter changed or left out, such as
	// truncated texts or an end time before the start time.
	Warnings []string
}

// Problem is a record or a file that could not be used.
type Problem struct {
	Where  string // file and line, or file and array index
	ID     string // the record's id or source id, when known
	Reason string
}

func (p Problem) String() string {
	s := p.Where
	if p.ID != "" {
		s += " (" + p.ID + ")"
	}
	return s + ": " + p.Reason
}

// Skip is a file that was read and is not a record: a README, LICENSE,
// SOURCE.txt, a template.
type Skip struct {
	Path   string
	Reason string
}

// Result is what Load read.
type Result struct {
	Records  []Record
	Problems []Problem
	Skipped  []Skip
	// Format is the format of each file that held records (or was meant
	// to), by path.
	Format map[string]Format
}

// DuplicateURLs returns, for each normalized source URL that more than one
// record cites, the source keys of those records in load order. It is how
// the same postmortem is found across collections.
func (r *Result) DuplicateURLs() map[string][]string {
	by := map[string][]string{}
	for _, rec := range r.Records {
		seen := map[string]bool{}
		for _, s := range rec.Incident.Sources {
			n := NormalizeURL(s.URL)
			if n == "" || seen[n] {
				continue
			}
			seen[n] = true
			by[n] = append(by[n], rec.SourceKey)
		}
	}
	for k, v := range by {
		if len(v) < 2 {
			delete(by, k)
		}
	}
	return by
}

// Options control Load.
type Options struct {
	// Format forces the format of every record file; "" detects it per file.
	// Files that are not records (LICENSE, SOURCE.txt, READMEs without a link
	// list, templates) are skipped either way.
	Format Format
	// Taxonomy maps source categories and keywords onto terms. Nil maps
	// nothing: every value is reported as unmapped.
	Taxonomy *incidentlib.Taxonomy
	// Aliases maps spellings of organizations onto one name and slug. Nil
	// uses the table embedded in the package (org_aliases.json).
	Aliases *OrgAliases
	// Collection overrides the collection name used in source keys and
	// attribution (by default the owner of the repository named in the
	// collection's SOURCE.txt, or the name of the folder).
	Collection string
	// Org is the organization of sectioned-md records, which do not name
	// one (by default the owner of the repository in SOURCE.txt, such as
	// "dfds", else the collection name), resolved through Aliases.
	Org string
	// Licence is the SPDX licence of records whose collection has no
	// LICENSE file that can be recognised; "" means "NOASSERTION".
	Licence string
	// Now is the clock; nil is time.Now. It is only used to reject dates in
	// the future.
	Now func() time.Time
}

// Load reads the files and directories in paths (directories are walked,
// skipping hidden entries) and returns their records. Files that are not
// records are listed in Skipped; records and files that cannot be used are
// listed in Problems. Load returns an error only when a path cannot be read
// at all or the options are invalid.
func Load(paths []string, opts Options) (*Result, error) {
	if opts.Format != "" && !opts.Format.IsValid() {
		return nil, incidentlib.Errorf(incidentlib.EINVALID, "unknown format %q", opts.Format)
	}
	l := newLoader(opts)
	res := &Result{Format: map[string]Format{}}
	for _, p := range paths {
		files, err := listFiles(p)
		if err != nil {
			return nil, err
		}
		for _, f := range files {
			data, err := os.ReadFile(f)
			if err != nil {
				return nil, fmt.Errorf("importer: %w", err)
			}
			l.loadFile(res, f, data)
		}
	}
	return res, nil
}

// LoadData reads one file's contents as Load would read the file at path
// (path names it in messages, finds its collection, and is used to detect
// its format).
func LoadData(path string, data []byte, opts Options) (*Result, error) {
	if opts.Format != "" && !opts.Format.IsValid() {
		return nil, incidentlib.Errorf(incidentlib.EINVALID, "unknown format %q", opts.Format)
	}
	res := &Result{Format: map[string]Format{}}
	newLoader(opts).loadFile(res, path, data)
	return res, nil
}

// listFiles returns path itself, or the regular files under the directory
// path in lexical order, leaving out hidden files and folders.
func listFiles(path string) ([]string, error) {
	st, err := os.Stat(path)
	if err != nil {
		return nil, fmt.Errorf("importer: %w", err)
	}
	if !st.IsDir() {
		return []string{path}, nil
	}
	var files []string
	err = filepath.WalkDir(path, func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if p != path && strings.HasPrefix(d.Name(), ".") {
			if d.IsDir() {
				return filepath.SkipDir
			}
			return nil
		}
		if d.Type().IsRegular() {
			files = append(files, p)
		}
		return nil
	})
	if err != nil {
		return nil, fmt.Errorf("importer: %w", err)
	}
	sort.Strings(files)
	return files, nil
}

// Detect returns the format of the file at path, by its name and content.
// For a directory it returns the format most of its record files have. It
// returns an EINVALID error for a file that is not a record file (with the
// reason) or whose format is not recognised.
func Detect(path string) (Format, error) {
	files, err := listFiles(path)
	if err != nil {
		return "", err
	}
	count := map[Format]int{}
	var lastErr error
	for _, f := range files {
		data, err := os.ReadFile(f)
		if err != nil {
			return "", fmt.Errorf("importer: %w", err)
		}
		format, err := DetectData(f, data)
		if err != nil {
			lastErr = err
			continue
		}
		count[format]++
	}
	best, n := Format(""), 0
	for _, f := range Formats {
		if count[f] > n {
			best, n = f, count[f]
		}
	}
	if best == "" {
		if len(files) == 1 && lastErr != nil {
			return "", lastErr
		}
		return "", incidentlib.Errorf(incidentlib.EINVALID, "%s: no file in a known postmortem format", path)
	}
	return best, nil
}

// DetectData returns the format of a file named name holding data. It
// returns an EINVALID error saying why when the file is not a record file.
func DetectData(name string, data []byte) (Format, error) {
	f, skip := detect(name, data)
	if skip != "" {
		return "", incidentlib.Errorf(incidentlib.EINVALID, "%s: %s", name, skip)
	}
	return f, nil
}

// detect returns the format of a file, or why it is not a record file.
func detect(name string, data []byte) (Format, string) {
	base := filepath.Base(name)
	upper := strings.ToUpper(base)
	switch {
	case strings.HasPrefix(upper, "LICENSE"), strings.HasPrefix(upper, "LICENCE"), strings.HasPrefix(upper, "COPYING"):
		return "", "not a record: licence file"
	case upper == "SOURCE.TXT":
		return "", "not a record: collection source note"
	}
	text := bytes.TrimLeft(stripBOM(data), " \t\r\n")
	ext := strings.ToLower(filepath.Ext(base))
	if len(text) == 0 {
		if ext == ".md" || ext == ".json" || ext == ".jsonl" || ext == ".ndjson" || ext == "" {
			return "", "" // an empty record file is a problem, not a skip; the format is unknown
		}
		return "", "not a record: empty file"
	}
	isReadme := strings.HasPrefix(upper, "README")
	switch text[0] {
	case '[':
		if looksLikeJSONList(text) {
			return FormatJSONList, ""
		}
		return FormatILJSON, ""
	case '{':
		if ext == ".jsonl" || ext == ".ndjson" || iljson.IsJSONLines(text) {
			return FormatJSONL, ""
		}
		return FormatILJSON, ""
	}
	if ext == ".json" {
		return FormatILJSON, ""
	}
	if ext == ".jsonl" || ext == ".ndjson" {
		return FormatJSONL, ""
	}
	if bytes.HasPrefix(text, []byte("---")) && !isReadme {
		return FormatFrontmatterMD, ""
	}
	if countLinkListLines(text) >= 3 {
		return FormatLinkListMD, ""
	}
	if isReadme {
		return "", "not a record: README without a link list"
	}
	if isTemplateName(base) {
		return "", "not a record: template"
	}
	if looksSectioned(text) {
		return FormatSectionedMD, ""
	}
	if countLinkListLines(text) > 0 {
		return FormatLinkListMD, ""
	}
	if ext == ".md" || ext == ".markdown" || ext == "" {
		return "", "" // unknown Markdown: a problem, not a skip
	}
	return "", "not a record: unknown file type " + ext
}

func isTemplateName(base string) bool {
	return strings.Contains(strings.ToLower(base), "template")
}

// loader holds what Load needs across files.
type loader struct {
	opts    Options
	aliases *OrgAliases
	terms   termMapper
	now     func() time.Time
	colls   map[string]*collection // by directory
	keys    map[string]string      // source key -> where, of the records read
	ids     map[string]string      // IL-JSON id -> where
}

func newLoader(opts Options) *loader {
	l := &loader{opts: opts, aliases: opts.Aliases, terms: termMapper{opts.Taxonomy}, now: opts.Now, colls: map[string]*collection{}, keys: map[string]string{}, ids: map[string]string{}}
	if l.aliases == nil {
		l.aliases = DefaultOrgAliases()
	}
	if l.now == nil {
		l.now = time.Now
	}
	return l
}

// file is one source file being read.
type file struct {
	Path string // as given
	Rel  string // slash path relative to the collection root
	Data []byte // UTF-8 text, BOM removed, CRLF as LF
	Coll *collection
}

func (l *loader) loadFile(res *Result, path string, data []byte) {
	format, skip := detect(path, data)
	if skip != "" {
		res.Skipped = append(res.Skipped, Skip{Path: path, Reason: skip})
		return
	}
	if isTemplateName(filepath.Base(path)) && format == FormatSectionedMD {
		res.Skipped = append(res.Skipped, Skip{Path: path, Reason: "not a record: template"})
		return
	}
	if l.opts.Format != "" {
		format = l.opts.Format
	}
	if format != "" {
		res.Format[path] = format
	}
	if off := iljson.InvalidUTF8Offset(data); off >= 0 {
		line := 1 + bytes.Count(data[:off], []byte("\n"))
		res.Problems = append(res.Problems, Problem{Where: fmt.Sprintf("%s:%d", path, line), Reason: fmt.Sprintf("not valid UTF-8: invalid byte 0x%02x at byte offset %d", data[off], off)})
		return
	}
	text := normalizeNewlines(stripBOM(data))
	if len(bytes.TrimSpace(text)) == 0 {
		res.Problems = append(res.Problems, Problem{Where: path, Reason: "empty file"})
		return
	}
	if format == "" {
		res.Problems = append(res.Problems, Problem{Where: path, Reason: "format not recognised: not IL-JSON, front-matter Markdown, sectioned Markdown, a JSON list or a Markdown link list"})
		return
	}
	coll := l.collectionFor(path)
	f := &file{Path: path, Rel: coll.rel(path), Data: text, Coll: coll}
	var recs []Record
	var probs []Problem
	switch format {
	case FormatILJSON, FormatJSONL:
		recs, probs = l.parseILJSON(f, format == FormatJSONL)
	case FormatFrontmatterMD:
		recs, probs = l.parseFrontmatter(f)
	case FormatSectionedMD:
		var skipWhy string
		recs, probs, skipWhy = l.parseSectioned(f)
		if skipWhy != "" {
			delete(res.Format, path)
			res.Skipped = append(res.Skipped, Skip{Path: path, Reason: skipWhy})
			return
		}
	case FormatJSONList:
		recs, probs = l.parseJSONList(f)
	case FormatLinkListMD:
		recs, probs = l.parseLinkList(f)
	}
	for _, r := range recs {
		if p, ok := l.check(r); !ok {
			probs = append(probs, p)
			continue
		}
		if prev, dup := l.keys[r.SourceKey]; dup {
			probs = append(probs, Problem{Where: r.Where, ID: r.SourceKey, Reason: "the same record as " + prev})
			continue
		}
		if id := r.Incident.ID; id != "" {
			if prev, dup := l.ids[id]; dup {
				probs = append(probs, Problem{Where: r.Where, ID: id, Reason: "id already used by the record at " + prev})
				continue
			}
			l.ids[id] = r.Where
		}
		l.keys[r.SourceKey] = r.Where
		res.Records = append(res.Records, r)
	}
	res.Problems = append(res.Problems, probs...)
}

// check validates a finished record as the store will (with a placeholder
// id when it has none) and returns a problem when it would be refused.
func (l *loader) check(r Record) (Problem, bool) {
	inc := *r.Incident
	if inc.ID == "" {
		inc.ID = incidentlib.FormatID(1)
		if inc.RecurrenceOf == inc.ID || slices.Contains(inc.Related, inc.ID) {
			inc.ID = incidentlib.FormatID(2)
		}
	}
	err := inc.Validate()
	if err == nil {
		return Problem{}, true
	}
	var msgs []string
	for _, e := range incidentlib.ErrorList(err) {
		msgs = append(msgs, e.Message)
	}
	if len(msgs) == 0 {
		msgs = []string{err.Error()}
	}
	id := r.Incident.ID
	if id == "" {
		id = r.SourceKey
	}
	return Problem{Where: r.Where, ID: id, Reason: "invalid record: " + strings.Join(msgs, "; ")}, false
}

func stripBOM(b []byte) []byte { return bytes.TrimPrefix(b, []byte("\xef\xbb\xbf")) }

func normalizeNewlines(b []byte) []byte {
	if !bytes.Contains(b, []byte("\r")) {
		return b
	}
	b = bytes.ReplaceAll(b, []byte("\r\n"), []byte("\n"))
	return bytes.ReplaceAll(b, []byte("\r"), []byte("\n"))
}
