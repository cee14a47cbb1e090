package search

import (
	"bytes"
	"encoding/json"
	"strings"

	"github.com/incidentlib/incidentlib"
)

// textsOf returns an incident holding only the fields the index reads
// (org and the texts) from the record's IL-JSON. It scans for those
// fields and skips the rest without decoding it; anything it does not
// expect (a key in another case, malformed JSON) goes through the full
// decoder instead. It reads records the store wrote (valid IL-JSON), for
// which the result is what decoding the record gives (TestTextsOf).
func textsOf(b []byte) (*incidentlib.Incident, error) {
	inc := &incidentlib.Incident{}
	if scanTexts(b, inc) {
		return inc, nil
	}
	var full incidentlib.Incident
	if err := json.Unmarshal(b, &full); err != nil {
		return nil, err
	}
	return &incidentlib.Incident{Org: full.Org, Title: full.Title, Summary: full.Summary, Lessons: full.Lessons,
		Trigger: full.Trigger, Detection: full.Detection, SymptomsText: full.SymptomsText}, nil
}

// scanner reads JSON written by encoding/json.
type scanner struct {
	b  []byte
	i  int
	ok bool
}

func (s *scanner) ws() {
	for s.i < len(s.b) {
		switch s.b[s.i] {
		case ' ', '\t', '\n', '\r':
			s.i++
		default:
			return
		}
	}
}

func (s *scanner) peek() byte {
	s.ws()
	if s.i >= len(s.b) {
		s.ok = false
		return 0
	}
	return s.b[s.i]
}

func (s *scanner) expect(c byte) {
	if s.peek() != c {
		s.ok = false
		return
	}
	s.i++
}

// str reads a string; escapes are decoded by encoding/json.
func (s *scanner) str() string {
	start, escaped := s.strEnd()
	if !s.ok {
		return ""
	}
	if !escaped {
		return string(s.b[start+1 : s.i-1])
	}
	var v string
	if err := json.Unmarshal(s.b[start:s.i], &v); err != nil {
		s.ok = false
	}
	return v
}

// strEnd moves past a string, returning where it started and whether it
// holds escapes.
func (s *scanner) strEnd() (start int, escaped bool) {
	if s.peek() != '"' {
		s.ok = false
		return 0, false
	}
	start = s.i
	s.i++
	q := bytes.IndexByte(s.b[s.i:], '"')
	if q < 0 {
		s.ok = false
		return start, false
	}
	if bytes.IndexByte(s.b[s.i:s.i+q], '\\') < 0 {
		s.i += q + 1
		return start, false
	}
	// Walk the escapes: the quote ends the string unless escaped.
	for s.i < len(s.b) {
		c := s.b[s.i]
		if c == '\\' {
			s.i += 2
			continue
		}
		s.i++
		if c == '"' {
			return start, true
		}
	}
	s.ok = false
	return start, true
}

// skip passes over one value.
func (s *scanner) skip() {
	switch s.peek() {
	case '"':
		s.strEnd()
	case '{', '[':
		depth := 0
		for s.i < len(s.b) {
			switch s.b[s.i] {
			case '"':
				s.strEnd()
				if !s.ok {
					return
				}
				continue
			case '{', '[':
				depth++
			case '}', ']':
				depth--
				if depth == 0 {
					s.i++
					return
				}
			}
			s.i++
		}
		s.ok = false
	default:
		for s.i < len(s.b) {
			switch s.b[s.i] {
			case ',', '}', ']', ' ', '\t', '\n', '\r':
				return
			}
			s.i++
		}
	}
}

func (s *scanner) null() bool {
	if s.peek() == 'n' && strings.HasPrefix(string(s.b[s.i:min(len(s.b), s.i+4)]), "null") {
		s.i += 4
		return true
	}
	return false
}

// object calls fn for each key of an object, with the scanner at its
// value; fn must read or skip the value.
func (s *scanner) object(fn func(key string)) {
	s.expect('{')
	if s.peek() == '}' {
		s.i++
		return
	}
	for s.ok {
		k := s.str()
		s.expect(':')
		if !s.ok {
			return
		}
		fn(k)
		switch s.peek() {
		case ',':
			s.i++
		case '}':
			s.i++
			return
		default:
			s.ok = false
		}
	}
}

func (s *scanner) text(t *incidentlib.Text) {
	*t = incidentlib.Text{}
	if s.null() {
		return
	}
	s.object(func(k string) {
		switch k {
		case "en":
			if !s.null() {
				t.En = s.str()
			}
		case "ko":
			if !s.null() {
				t.Ko = s.str()
			}
		default:
			if strings.EqualFold(k, "en") || strings.EqualFold(k, "ko") {
				s.ok = false
			}
			s.skip()
		}
	})
}

var textKeys = []string{"org", "title", "summary", "lessons", "trigger", "detection", "symptoms_text"}

// scanTexts fills inc's org and texts from b; false if b is not what it
// expects.
func scanTexts(b []byte, inc *incidentlib.Incident) bool {
	s := &scanner{b: b, ok: true}
	s.object(func(k string) {
		switch k {
		case "org":
			if !s.null() {
				inc.Org = s.str()
			}
		case "title":
			s.text(&inc.Title)
		case "summary":
			s.text(&inc.Summary)
		case "lessons":
			s.text(&inc.Lessons)
		case "trigger":
			s.text(&inc.Trigger)
		case "detection":
			s.text(&inc.Detection)
		case "symptoms_text":
			s.text(&inc.SymptomsText)
		default:
			for _, t := range textKeys {
				if strings.EqualFold(k, t) {
					s.ok = false
				}
			}
			s.skip()
		}
	})
	if s.ok {
		s.ws()
		s.ok = s.i == len(s.b)
	}
	return s.ok
}
