package incidentlib

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"strings"

	"github.com/incidentlib/incidentlib/iljson"
)

// The record grammar of member names (docs/editing.md): a record's JSON
// names every member once, at every depth, and an object's unknown
// members (Extra) never take the name of one of its known members, in any
// case (encoding/json reads "Title" into title), nor, at the top, a name
// an importer keys on to tell a record from another kind of line
// (ReservedTopMembers). checkMembers holds the rule; Incident.validate
// runs it, so every path that runs Validate or ValidateIncoming (GraphQL
// and REST writes and imports, import, a replica's and a cluster node's
// apply, history import, check) holds it.

// HistoryMember is the member of a line of export --history that holds the
// versions: a line with it at its top is an incident with its history
// (IsHistoryLine), never a record.
const HistoryMember = "history"

// ReservedTopMembers are the names a record's top-level unknown members
// may not take, beyond its known ones, each with why: the members the
// readers of export files and of the change feed key on to tell lines
// apart. A feed line is {"seq":…,"deleted":…,"entry":{…}, then the
// record's members (WriteChangeLine): a record member of one of those
// names would be a second one in the line.
var ReservedTopMembers = map[string]string{
	HistoryMember: "at the top of a line marks an incident with its history (export --history)",
	"seq":         "begins every line of the change feed, whose record lines carry the record's members",
	"deleted":     "says whether a line of the change feed is a tombstone",
	"entry":       "is the history entry of a line of the history feed",
}

// IsHistoryLine reports whether b, one line of a file, is an incident with
// its history (export --history): a JSON object with a HistoryMember
// member at its top. A record cannot be one (ReservedTopMembers).
func IsHistoryLine(b []byte) bool {
	if len(b) == 0 || b[0] != '{' || !strings.Contains(string(b), `"`+HistoryMember+`"`) {
		return false
	}
	var top map[string]json.RawMessage
	if json.Unmarshal(b, &top) != nil {
		return false
	}
	_, ok := top[HistoryMember]
	return ok
}

// recordMembers walks a record's objects for checkMembers.
var recordMembers = iljson.MemberWalk{Known: KnownMembers}

// checkMembers walks the record i (then every object it holds, in lists
// too) and adds a problem, naming its path, for each unknown member whose
// name is reserved at its object, and for each object inside an unknown
// member's value or a doc that names a member twice. The walk
// (iljson.MemberWalk) follows the Go types, so an object type added to
// the record is walked without a change here (a test checks that every
// type that carries Extra has its KnownMembers).
func checkMembers(p *problems, i *Incident) {
	recordMembers.Walk(i, memberChecker{p})
}

// memberChecker is the record grammar's iljson.MemberVisitor.
type memberChecker struct{ p *problems }

func (c memberChecker) Extra(path []string, extra Extra, known map[string]bool, top bool) {
	checkExtra(c.p, extra, known, path, top)
}

func (c memberChecker) Raw(path []string, raw json.RawMessage) { checkRawMembers(c.p, raw, path) }

// KnownMembers returns the member names IL-JSON defines for an object of
// v's type (Incident, Text, Impact, Timeline, Item, Source, Review, OrgRole
// or TextOrigins),
// which are read into its fields; any other member is kept in its Extra.
// It returns nil for other types. The map is shared: do not change it.
func KnownMembers(v any) map[string]bool {
	switch v.(type) {
	case Incident, *Incident:
		return incidentKnown
	case Text, *Text:
		return textKnown
	case Impact, *Impact:
		return impactKnown
	case Timeline, *Timeline:
		return timelineKnown
	case Item, *Item:
		return itemKnown
	case Source, *Source:
		return sourceKnown
	case Review, *Review:
		return reviewKnown
	case OrgRole, *OrgRole:
		return orgRoleKnown
	case TextOrigins, *TextOrigins:
		return textKnown
	case Event, *Event:
		return eventKnown
	}
	return nil
}

// ReservedMember says why an unknown member of an object whose known
// members are known may not be called name ("" if it may): it is a known
// one in any case, or, at the top of a record (top), one of
// ReservedTopMembers.
func ReservedMember(name string, known map[string]bool, top bool) string {
	for k := range known {
		if strings.EqualFold(k, name) {
			if k == name {
				return fmt.Sprintf("is the name of the known member %q", k)
			}
			return fmt.Sprintf("differs from the known member %q only in case", k)
		}
	}
	if top {
		for r, why := range ReservedTopMembers {
			if strings.EqualFold(r, name) {
				return fmt.Sprintf("is reserved: %q %s", r, why)
			}
		}
	}
	return ""
}

func checkExtra(p *problems, extra Extra, known map[string]bool, path []string, top bool) {
	if len(extra) == 0 {
		return
	}
	for _, name := range extra.Names() {
		field := append(path[:len(path):len(path)], name)
		if why := ReservedMember(name, known, top); why != "" {
			p.es = append(p.es, FieldErrorf(EINVALID, field, "unknown member %q of %s %s", name, objectName(path), why))
			p.rules = append(p.rules, RuleStructure)
		}
		checkRawMembers(p, extra[name], field)
	}
}

// checkRawMembers adds a problem when the JSON value raw, at path, is not
// JSON or holds an object that names a member twice.
func checkRawMembers(p *problems, raw []byte, path []string) {
	if bytes.IndexByte(raw, '{') < 0 && json.Valid(raw) {
		return // no object to name a member twice
	}
	err := iljson.CheckDuplicateKeys(raw)
	if err == nil {
		return
	}
	var de *iljson.DuplicateKeyError
	field := slices.Clone(path)
	msg := fmt.Sprintf("%s is not JSON: %v", strings.Join(path, "."), err)
	if errors.As(err, &de) {
		field = append(path[:len(path):len(path)], de.Steps()...)
		field = append(field, de.Key)
		msg = fmt.Sprintf("member %q appears twice in %s", de.Key, objectName(field[:len(field)-1]))
	}
	p.es = append(p.es, FieldErrorf(EINVALID, field, "%s", msg))
	p.rules = append(p.rules, RuleStructure)
}

func objectName(path []string) string {
	if len(path) == 0 {
		return "the record"
	}
	return strings.Join(path, ".")
}

// CheckMemberNames is the member grammar of JSON text as received or
// stored, for the paths that keep the bytes (history import, check): no
// object, at any depth, names a member twice, which a decoded record
// cannot show (the last one wins). It returns nil or a *RecordError whose
// field is the path of the member named twice (or of the text when it is
// not JSON).
func CheckMemberNames(raw []byte) error {
	var p problems
	checkRawMembers(&p, raw, nil)
	return p.err()
}
