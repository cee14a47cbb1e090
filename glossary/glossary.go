// Package glossary is the library's bilingual glossary of incident
// vocabulary: pairs of English and Korean words and phrases of one
// meaning, which search uses to find incidents written in the other
// language than the query (docs/search.md, "Across languages"). The
// built-in glossary is seeds/glossary.json plus the labels of the
// taxonomy (seeds.Glossary); this package holds the entry type, its
// validation and the file format.
package glossary

import (
	"context"
	"encoding/json"
	"fmt"
	"strings"
	"unicode"
	"unicode/utf8"

	"github.com/incidentlib/incidentlib"
)

// Entry is one pair of the glossary (incidentlib.GlossaryEntry): the
// English words or phrases of one meaning and the Korean ones, each
// side's preferred form first ("rollout", "roll-out" / "롤아웃", "배포"),
// and a note for its reviewers. A query that holds any form of one side
// also finds text holding any form of the other. A loanword written the
// same in both languages ("DNS") may stand on both sides. The type is the
// root package's, so that the library's one write side
// (incidentlib.TaxonomyWriter) can carry it; its rules are here.
type Entry = incidentlib.GlossaryEntry

// Limits of an entry.
const (
	// MaxForms is how many forms one side of an entry may have.
	MaxForms = 8
	// MaxFormRunes is how long one form may be, in characters.
	MaxFormRunes = 64
	// MaxFormWords is how many words one form may have.
	MaxFormWords = 6
	// MaxEntries is how many entries a glossary may hold.
	MaxEntries = 10_000
	// MaxNoteRunes is how long an entry's note may be, in characters.
	MaxNoteRunes = 500
)

// Validate checks an entry: both sides given, at most MaxForms forms of
// at most MaxFormRunes characters and MaxFormWords words each, printable,
// no form twice on one side (case aside), no Hangul on the English side,
// and a note of at most MaxNoteRunes printable characters (new lines
// allowed). It returns an EINVALID error naming the field (en, ko, en.2,
// note...).
func Validate(e *Entry) error {
	if err := validateSide("en", e.En, true); err != nil {
		return err
	}
	if err := validateSide("ko", e.Ko, false); err != nil {
		return err
	}
	return validateNote(e.Note)
}

func validateNote(note string) error {
	field := []string{"note"}
	switch {
	case !utf8.ValidString(note):
		return incidentlib.FieldErrorf(incidentlib.EINVALID, field, "note is not valid UTF-8")
	case utf8.RuneCountInString(note) > MaxNoteRunes:
		return incidentlib.FieldErrorf(incidentlib.EINVALID, field, "note is %d characters long; at most %d are allowed", utf8.RuneCountInString(note), MaxNoteRunes)
	case strings.ContainsFunc(note, func(r rune) bool { return r != '\n' && !unicode.IsPrint(r) }):
		return incidentlib.FieldErrorf(incidentlib.EINVALID, field, "note holds a control or invisible character")
	}
	return nil
}

// ValidateKey refuses a key no entry can have (field "key"): empty, or
// longer than a form may be.
func ValidateKey(key string) error {
	if key == "" || !utf8.ValidString(key) || utf8.RuneCountInString(key) > MaxFormRunes {
		return incidentlib.FieldErrorf(incidentlib.EINVALID, []string{"key"}, "key must be an entry's first English form, of 1 to %d characters", MaxFormRunes)
	}
	return nil
}

func validateSide(name string, forms []string, english bool) error {
	if len(forms) == 0 {
		return incidentlib.FieldErrorf(incidentlib.EINVALID, []string{name}, "%s needs at least one word or phrase", name)
	}
	if len(forms) > MaxForms {
		return incidentlib.FieldErrorf(incidentlib.EINVALID, []string{name}, "%s has %d forms; at most %d are allowed", name, len(forms), MaxForms)
	}
	seen := map[string]int{}
	for i, f := range forms {
		field := []string{name, fmt.Sprint(i)}
		switch {
		case !utf8.ValidString(f):
			return incidentlib.FieldErrorf(incidentlib.EINVALID, field, "%s[%d] is not valid UTF-8", name, i)
		case utf8.RuneCountInString(f) > MaxFormRunes: // before any message quotes the form
			return incidentlib.FieldErrorf(incidentlib.EINVALID, field, "%s[%d] is %d characters long; at most %d are allowed", name, i, utf8.RuneCountInString(f), MaxFormRunes)
		case strings.TrimSpace(f) != f || strings.Contains(f, "  "):
			return incidentlib.FieldErrorf(incidentlib.EINVALID, field, "%s[%d] %q has spaces at its ends or two in a row", name, i, f)
		case f == "":
			return incidentlib.FieldErrorf(incidentlib.EINVALID, field, "%s[%d] is empty", name, i)
		case len(strings.Fields(f)) > MaxFormWords:
			return incidentlib.FieldErrorf(incidentlib.EINVALID, field, "%s[%d] %q has more than %d words", name, i, f, MaxFormWords)
		case !strings.ContainsFunc(f, func(r rune) bool { return unicode.IsLetter(r) || unicode.IsDigit(r) }):
			return incidentlib.FieldErrorf(incidentlib.EINVALID, field, "%s[%d] %q has no letter or digit", name, i, f)
		case strings.ContainsFunc(f, func(r rune) bool { return !unicode.IsPrint(r) }):
			return incidentlib.FieldErrorf(incidentlib.EINVALID, field, "%s[%d] holds a control or invisible character", name, i)
		case english && strings.ContainsFunc(f, isHangul):
			return incidentlib.FieldErrorf(incidentlib.EINVALID, field, "%s[%d] %q holds Hangul: Korean forms go in ko", name, i, f)
		}
		k := strings.ToLower(f)
		if j, ok := seen[k]; ok {
			return incidentlib.FieldErrorf(incidentlib.EINVALID, field, "%s[%d] %q repeats %s[%d]", name, i, f, name, j)
		}
		seen[k] = i
	}
	return nil
}

func isHangul(r rune) bool {
	return (0xAC00 <= r && r <= 0xD7A3) || (0x1100 <= r && r <= 0x11FF) || (0x3130 <= r && r <= 0x318F)
}

// Key returns the entry's identity: its preferred English form, lower
// case. Two entries of one glossary never share it.
func Key(e *Entry) string {
	if len(e.En) == 0 {
		return ""
	}
	return strings.ToLower(e.En[0])
}

// Parse reads the glossary file format {"entries":[{"en":[...],"ko":[...]}]}
// and checks every entry, and that no two share a key.
func Parse(data []byte) ([]Entry, error) {
	var f struct {
		Entries []Entry `json:"entries"`
	}
	if err := json.Unmarshal(data, &f); err != nil {
		return nil, fmt.Errorf("glossary: %w", err)
	}
	if err := Check(f.Entries); err != nil {
		return nil, err
	}
	return f.Entries, nil
}

// Check validates every entry of a glossary, and that no two share a key
// and there are at most MaxEntries.
func Check(entries []Entry) error {
	if len(entries) > MaxEntries {
		return fmt.Errorf("glossary: %d entries, more than %d", len(entries), MaxEntries)
	}
	keys := map[string]int{}
	for i := range entries {
		if err := Validate(&entries[i]); err != nil {
			return fmt.Errorf("glossary: entry %d (%v): %w", i, entries[i].En, err)
		}
		k := Key(&entries[i])
		if j, ok := keys[k]; ok {
			return fmt.Errorf("glossary: entry %d repeats the key %q of entry %d", i, k, j)
		}
		keys[k] = i
	}
	return nil
}

// Glossary is a glossary at one version (incidentlib.Glossary).
type Glossary = incidentlib.Glossary

// Reader gives the glossary as it is now (incidentlib.GlossaryReader: a
// store is one).
type Reader = incidentlib.GlossaryReader

// Static is a Reader of a fixed glossary.
type Static struct{ G *Glossary }

// Glossary returns s.G.
func (s Static) Glossary(context.Context) (*Glossary, error) { return s.G, nil }
