package importer

import (
	"bytes"

	"github.com/incidentlib/incidentlib"
)

// The fast path of ilRecord: a record that decodes is valid JSON, so the
// duplicate-key scan and the case check can be answered from a byte scan
// and from the decoded record's unknown members. Only a record they may
// find fault with takes the slow path, which says exactly what is wrong.

// maybeDuplicateKeys reports whether valid JSON data may name a member
// twice in one object: two names with the same bytes, or a name with an
// escape (which may spell another name differently).
func maybeDuplicateKeys(data []byte) bool {
	// The names of the open objects, one after another (starts: where
	// each open object's begin), and per open container whether it is an
	// object; on the stack for records of ordinary depth.
	var keysBuf [64][]byte
	var startsBuf [16]int
	var inObjectBuf [32]bool
	keys, starts, inObject := keysBuf[:0], startsBuf[:0], inObjectBuf[:0]
	expectKey := false
	for i := 0; i < len(data); i++ {
		switch c := data[i]; c {
		case '{':
			starts = append(starts, len(keys))
			inObject = append(inObject, true)
			expectKey = true
		case '[':
			inObject = append(inObject, false)
			expectKey = false
		case '}':
			keys = keys[:starts[len(starts)-1]]
			starts = starts[:len(starts)-1]
			inObject = inObject[:len(inObject)-1]
		case ']':
			inObject = inObject[:len(inObject)-1]
		case ',':
			expectKey = len(inObject) > 0 && inObject[len(inObject)-1]
		case '"':
			j := i + 1
			esc := false
			for ; j < len(data) && data[j] != '"'; j++ {
				if data[j] == '\\' {
					esc = true
					j++
				}
			}
			if expectKey {
				if esc {
					return true
				}
				key := data[i+1 : j]
				for _, k := range keys[starts[len(starts)-1]:] {
					if bytes.Equal(k, key) {
						return true
					}
				}
				keys = append(keys, key)
				expectKey = false
			}
			i = j
		}
	}
	return false
}

// caseSuspect reports whether a decoded record has an unknown member, at
// any level the case check looks at, whose name differs from a known one
// only in case.
func caseSuspect(inc *incidentlib.Incident) bool {
	suspect := func(extra incidentlib.Extra, known map[string]bool) bool {
		for name := range extra {
			if incidentlib.ReservedMember(name, known, false) != "" {
				return true
			}
		}
		return false
	}
	text := incidentlib.KnownMembers(incidentlib.Text{})
	item := incidentlib.KnownMembers(incidentlib.Item{})
	if suspect(inc.Extra, incidentlib.KnownMembers(incidentlib.Incident{})) ||
		suspect(inc.Impact.Extra, incidentlib.KnownMembers(incidentlib.Impact{})) ||
		suspect(inc.Timeline.Extra, incidentlib.KnownMembers(incidentlib.Timeline{})) ||
		suspect(inc.Review.Extra, incidentlib.KnownMembers(incidentlib.Review{})) {
		return true
	}
	for _, t := range []incidentlib.Text{inc.Title, inc.Summary, inc.Lessons, inc.Trigger, inc.Detection, inc.SymptomsText} {
		if suspect(t.Extra, text) {
			return true
		}
	}
	for _, list := range [][]incidentlib.Item{inc.Remediation, inc.ActionItems} {
		for _, it := range list {
			if suspect(it.Extra, item) || suspect(it.Text.Extra, text) {
				return true
			}
		}
	}
	src := incidentlib.KnownMembers(incidentlib.Source{})
	for _, s := range inc.Sources {
		if suspect(s.Extra, src) {
			return true
		}
	}
	return false
}
