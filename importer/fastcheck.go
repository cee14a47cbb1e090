package importer

import "github.com/incidentlib/incidentlib"

// The fast path of ilRecord: a record that decodes is valid JSON, so the
// duplicate-key scan and the case check can be answered from a byte scan
// (iljson.MayRepeatKeys) and from the decoded record's unknown members. Only a record they may
// find fault with takes the slow path, which says exactly what is wrong.

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
