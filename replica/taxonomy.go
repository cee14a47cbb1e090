package replica

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"strconv"
	"strings"
	"time"
	"unicode/utf8"

	"github.com/incidentlib/incidentlib"
	"github.com/incidentlib/incidentlib/glossary"
)

// The taxonomy's history, carried from the primary: before each page of
// incident changes is applied, the follower reads the entries of the
// primary's taxonomy history after the one it applied last
// (GET /api/v1/taxonomy/changes) and applies them, so that the page's
// records are validated with the taxonomy they were written against. The
// entries are read after the page, so every change of the taxonomy
// committed before the page was read is among them.

// TaxonomyStore is what the follower needs of the store to take the
// primary's taxonomy. storage.Follower implements it.
type TaxonomyStore interface {
	incidentlib.TaxonomyApplier
	// ApplyTaxonomyChangesThrough applies entries as ApplyTaxonomyChanges
	// does and sets the position to through, past entries left out (those
	// the follower refused).
	ApplyTaxonomyChangesThrough(ctx context.Context, from, through uint64, changes []*incidentlib.TaxonomyChange) (uint64, error)
	// AdvanceAppliedSeq moves the position in the change feed from from to
	// to without a change: the primary's sequence moved by changes of its
	// taxonomy alone.
	AdvanceAppliedSeq(ctx context.Context, from, to uint64) (uint64, error)
}

// taxPage is one page of the primary's taxonomy history.
type taxPage struct {
	entries []*incidentlib.TaxonomyChange // the entries to apply
	skips   []skip                        // the entries refused (seq is the entry's number, id its subject)
	last    uint64                        // the number of the page's last entry, applied or refused
	full    bool                          // the page holds limit entries: more may follow
}

// entryHead matches the start of an entry as the primary writes it, for
// the number of one too long or too broken to read.
var entryHead = []byte(`{"n":`)

// errNoTaxonomyFeed is a primary that has no taxonomy feed (404): a
// release before it. The follower then copies incidents only.
var errNoTaxonomyFeed = errors.New("the primary serves no taxonomy feed")

// fetchTaxonomy reads one page of the primary's taxonomy history after the
// entry numbered after. Every entry is checked as anything that enters
// from outside (checkEntry); one that fails, or is over the record size
// limit, is refused (skipped: the position passes it). A page that is not
// a list of entries numbered upwards from after is refused whole.
func (f *Follower) fetchTaxonomy(ctx context.Context, after uint64, limit int) (taxPage, error) {
	var tp taxPage
	u := f.cfg.Primary + "/api/v1/taxonomy/changes?after=" + strconv.FormatUint(after, 10) + "&limit=" + strconv.Itoa(limit)
	pctx, cancel := context.WithTimeout(ctx, f.cfg.PageTimeout)
	defer cancel()
	req, err := http.NewRequestWithContext(pctx, http.MethodGet, u, nil)
	if err != nil {
		return tp, err
	}
	req.Header.Set("Accept", "application/x-ndjson")
	if f.cfg.Token != "" {
		req.Header.Set("Authorization", "Bearer "+f.cfg.Token)
	}
	resp, err := f.client.Do(req)
	if err != nil {
		return tp, fmt.Errorf("taxonomy feed after %d: %w", after, err)
	}
	defer resp.Body.Close()
	if resp.StatusCode == http.StatusNotFound {
		return tp, errNoTaxonomyFeed
	}
	if resp.StatusCode != http.StatusOK {
		b, _ := io.ReadAll(io.LimitReader(resp.Body, 512))
		return tp, fmt.Errorf("taxonomy feed after %d: the primary answered %d: %s", after, resp.StatusCode, strings.TrimSpace(string(b)))
	}
	lr := lineReader{r: bufio.NewReaderSize(resp.Body, 64<<10), max: f.maxRecord}
	prev, n := after, 0
	for line := 1; ; line++ {
		b, whole, rerr := lr.next()
		if len(b) > 0 {
			if whole {
				b = bytes.TrimSpace(b)
			}
			if n++; n > limit {
				return tp, fmt.Errorf("taxonomy feed after %d: more than the %d entries asked for: the page is refused", after, limit)
			}
			num, e, why, rule := readEntry(b, whole, f.maxRecord)
			if num == 0 {
				return tp, fmt.Errorf("taxonomy feed after %d, line %d: not an entry of the taxonomy's history: the page is refused", after, line)
			}
			if num <= prev {
				return tp, fmt.Errorf("taxonomy feed after %d, line %d: entry %d is not numbered above %d: the page is refused", after, line, num, prev)
			}
			prev = num
			if rule != "" {
				subject := ""
				if e != nil {
					subject = e.Subject
				}
				tp.skips = append(tp.skips, skip{seq: num, id: subject, rule: rule, why: why})
			} else {
				tp.entries = append(tp.entries, e)
			}
		}
		if rerr == io.EOF {
			break
		}
		if rerr != nil {
			return tp, fmt.Errorf("taxonomy feed after %d: reading the page: %w", after, rerr)
		}
	}
	tp.last, tp.full = prev, n == limit
	return tp, nil
}

// readEntry reads one line of the taxonomy feed: its entry's number (0:
// not an entry at all), and the entry, or why and by which rule it is
// refused.
func readEntry(line []byte, whole bool, maxBytes int) (num uint64, e *incidentlib.TaxonomyChange, why string, rule incidentlib.Rule) {
	if !whole {
		num = headNumber(line)
		return num, nil, fmt.Sprintf("the entry is over %d bytes, the record size limit (--max-record)", maxBytes), incidentlib.RuleSize
	}
	e = new(incidentlib.TaxonomyChange)
	if err := json.Unmarshal(line, e); err != nil {
		return headNumber(line), nil, "the entry does not decode: " + err.Error(), incidentlib.RuleStructure
	}
	if e.Number == 0 {
		return 0, nil, "", ""
	}
	if err := checkEntry(e); err != nil {
		return e.Number, e, incidentlib.ErrorMessage(err), incidentlib.RuleStructure
	}
	return e.Number, e, "", ""
}

// headNumber reads the number of an entry from the start of its line,
// 0 if there is none.
func headNumber(line []byte) uint64 {
	rest, ok := bytes.CutPrefix(line, entryHead)
	if !ok {
		return 0
	}
	end := bytes.IndexAny(rest, ",}")
	if end <= 0 {
		return 0
	}
	n, err := strconv.ParseUint(string(rest[:end]), 10, 64)
	if err != nil {
		return 0
	}
	return n
}

// checkEntry holds an entry of a primary's taxonomy history to the rules
// of what enters the store from outside: the term or organization it
// carries, before and after, passes the checks of the admin mutations
// (Term.Validate, Organization.Validate), its subject names it, its author
// is a name, its time RFC 3339 and its incidents incident ids. The store
// checks the rest when it applies the entry (a slug or alias used twice).
func checkEntry(e *incidentlib.TaxonomyChange) error {
	bad := func(format string, args ...any) error {
		return incidentlib.Errorf(incidentlib.EINVALID, "entry %d (%s %q): "+format, append([]any{e.Number, e.Action, e.Subject}, args...)...)
	}
	if _, err := time.Parse(time.RFC3339Nano, e.At); err != nil {
		return bad("at %q is not an RFC 3339 time", e.At)
	}
	if e.Author != "" && (!utf8.ValidString(e.Author) || utf8.RuneCountInString(e.Author) > incidentlib.MaxNameLen || strings.TrimSpace(e.Author) != e.Author || strings.ContainsFunc(e.Author, isControl)) {
		return bad("the author is not a name of at most %d characters on one line", incidentlib.MaxNameLen)
	}
	for _, id := range e.Incidents {
		if _, ok := incidentlib.ParseID(id); !ok {
			return bad("%q is not an incident id", id)
		}
	}
	term := func(raw json.RawMessage, what string, required bool) (*incidentlib.Term, error) {
		return decodeValid[incidentlib.Term](raw, "term "+what, required, bad)
	}
	org := func(raw json.RawMessage, what string, required bool) (*incidentlib.Organization, error) {
		return decodeValid[incidentlib.Organization](raw, "organization "+what, required, bad)
	}
	switch e.Action {
	case incidentlib.ActionAddTerm, incidentlib.ActionUpdateTerm, incidentlib.ActionAddAliases,
		incidentlib.ActionDeprecateTerm, incidentlib.ActionUndeprecateTerm, incidentlib.ActionReleaseTerm:
		if _, err := term(e.Before, "before", false); err != nil {
			return err
		}
		t, err := term(e.After, "after", true)
		if err != nil {
			return err
		}
		if e.Subject != t.ID() {
			return bad("the subject is not the term %s it carries", t.ID())
		}
	case incidentlib.ActionAddOrganization, incidentlib.ActionRenameOrganization:
		if _, err := org(e.Before, "before", false); err != nil {
			return err
		}
		o, err := org(e.After, "after", true)
		if err != nil {
			return err
		}
		if e.Subject != o.ID() {
			return bad("the subject is not the organization %s it carries", o.ID())
		}
	case incidentlib.ActionMergeOrganizations:
		if _, err := org(e.Before, "before", false); err != nil {
			return err
		}
		into, err := org(e.After, "after", true)
		if err != nil {
			return err
		}
		from, ok := strings.CutPrefix(e.Subject, "org:")
		if !ok || !incidentlib.ValidSlug(from) || from == into.Slug {
			return bad("a merge names the organization merged away as its subject, org:SLUG, apart from the one it was merged into")
		}
	case incidentlib.ActionGlossaryAdd, incidentlib.ActionGlossaryChange, incidentlib.ActionGlossaryRemove:
		return checkGlossaryEntry(e, bad)
	default:
		return bad("unknown action")
	}
	return nil
}

// checkGlossaryEntry holds an entry of the glossary's (ActionGlossary*)
// to the rules of the glossary's mutations: the entries it carries pass
// glossary.Validate, the subject is glossary:KEY with a key an entry can
// have, and an addition's is the key of the entry it adds.
func checkGlossaryEntry(e *incidentlib.TaxonomyChange, bad func(string, ...any) error) error {
	key, ok := strings.CutPrefix(e.Subject, "glossary:")
	if !ok || glossary.ValidateKey(key) != nil || strings.ToLower(key) != key {
		return bad("a glossary entry's subject is glossary:KEY, its key in lower case")
	}
	var after *glossary.Entry
	for _, side := range []struct {
		raw      json.RawMessage
		what     string
		required bool
	}{{e.Before, "before", false}, {e.After, "after", e.Action != incidentlib.ActionGlossaryRemove}} {
		if len(side.raw) == 0 {
			if side.required {
				return bad("the glossary entry after is missing")
			}
			continue
		}
		g := new(glossary.Entry)
		if err := json.Unmarshal(side.raw, g); err != nil {
			return bad("the glossary entry %s does not decode: %v", side.what, err)
		}
		if err := glossary.Validate(g); err != nil {
			return bad("the glossary entry %s: %s", side.what, incidentlib.ErrorMessage(err))
		}
		if side.what == "after" {
			after = g
		}
	}
	if e.Action == incidentlib.ActionGlossaryAdd && glossary.Key(after) != key {
		return bad("the subject is not the key %q of the entry added", glossary.Key(after))
	}
	return nil
}

func isControl(r rune) bool { return r < 0x20 || r == 0x7f || (r >= 0x80 && r < 0xa0) }

// followTaxonomy reads and applies the primary's taxonomy history after
// the store's position, page by page until a page is not full; it counts
// and logs the entries refused, and returns how many it applied.
func (f *Follower) followTaxonomy(ctx context.Context) (applied int, err error) {
	if f.noTaxonomyFeed.Load() {
		return 0, nil
	}
	from, err := f.tdb.AppliedTaxonomy(ctx)
	if err != nil {
		return 0, err
	}
	for {
		tp, err := f.fetchTaxonomy(ctx, from, f.cfg.PageSize)
		if errors.Is(err, errNoTaxonomyFeed) {
			f.noTaxonomyFeed.Store(true)
			f.cfg.Logger.Warn("the primary serves no taxonomy feed (an older release): this replica keeps its own taxonomy, and records with terms it lacks are skipped")
			return applied, nil
		}
		if err != nil {
			return applied, err
		}
		if tp.last == from {
			return applied, nil
		}
		n, err := f.applyTaxonomy(ctx, from, &tp)
		if err != nil {
			return applied, err
		}
		from = tp.last
		applied += n
		report(f.cfg.Logger, f.taxSkipped, tp.skips, "skipped an entry of the primary's taxonomy history: it breaks the rules the taxonomy is held to", "entry", "subject")
		s := uint64(len(tp.skips))
		f.update(func(st *Status) {
			st.TaxonomyEntry = from
			st.TaxonomyApplied += uint64(n)
			st.TaxonomySkipped += s
		})
		if !tp.full {
			return applied, nil
		}
	}
}

// applyTaxonomy applies a page of entries in one transaction with the
// position after its last. When the store refuses the page for one of its
// entries (one that would break the taxonomy: a slug or alias used twice),
// the entries are applied one by one instead, each refused one added to
// the page's skips; the position passes them. It returns how many entries
// it applied.
func (f *Follower) applyTaxonomy(ctx context.Context, from uint64, tp *taxPage) (int, error) {
	_, err := f.tdb.ApplyTaxonomyChangesThrough(ctx, from, tp.last, tp.entries)
	if err == nil {
		return len(tp.entries), nil
	}
	if !entryRefused(err) {
		return 0, fmt.Errorf("apply the taxonomy's entries %d..%d: %w", from+1, tp.last, err)
	}
	n := 0
	for _, e := range tp.entries {
		to, err := f.tdb.ApplyTaxonomyChangesThrough(ctx, from, e.Number, []*incidentlib.TaxonomyChange{e})
		if err != nil {
			if !entryRefused(err) {
				return n, fmt.Errorf("apply the taxonomy's entry %d: %w", e.Number, err)
			}
			tp.skips = append(tp.skips, skip{seq: e.Number, id: e.Subject, rule: incidentlib.RuleStructure, why: incidentlib.ErrorMessage(err)})
			continue // the next entry's position passes it
		}
		from = to
		n++
	}
	if _, err := f.tdb.ApplyTaxonomyChangesThrough(ctx, from, tp.last, nil); err != nil {
		return n, fmt.Errorf("apply the taxonomy's entries up to %d: %w", tp.last, err)
	}
	return n, nil
}

// entryRefused reports whether the store refused entries for what they
// hold (an entry named, or the taxonomy they would make), not for the
// position or an internal error.
func entryRefused(err error) bool {
	code := incidentlib.ErrorCode(err)
	if incidentlib.IsInternal(code) {
		return false
	}
	field := incidentlib.ErrorField(err)
	return (len(field) > 0 && field[0] == "changes") || code == incidentlib.EINVALID
}

// decodeValid decodes raw (absent: nil, unless required) and validates it,
// refusing with bad("the <what> …").
func decodeValid[T any, P interface {
	*T
	Validate() error
}](raw json.RawMessage, what string, required bool, bad func(string, ...any) error) (*T, error) {
	if len(raw) == 0 && !required {
		return nil, nil
	}
	v := P(new(T))
	if err := json.Unmarshal(raw, v); err != nil {
		return nil, bad("the %s does not decode: %v", what, err)
	}
	if err := v.Validate(); err != nil {
		return nil, bad("the %s: %s", what, incidentlib.ErrorMessage(err))
	}
	return (*T)(v), nil
}
