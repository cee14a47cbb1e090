package incidentlib

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"slices"
	"strconv"
	"time"
	"unicode/utf8"
)

// HistoryImporter writes incidents with their history as given, adding no
// version: the lines of export --history (docs/importing.md). It is an
// administrator's operation: the API lets only an admin token reach it.
type HistoryImporter interface {
	// ImportHistory reads a history export and writes every version as
	// given, all in one transaction or none. Returns ECONFLICT (naming the
	// id) if the store holds a history or a record of an id of the file,
	// EINVALID for a malformed line, a version whose record fails
	// ValidateIncoming (deprecated terms are accepted) or a link to an
	// incident the store will not hold. Returns how many incidents it
	// wrote.
	ImportHistory(ctx context.Context, r io.Reader) (int, error)
}

// The history grammar (docs/importing.md): the rules every incident's
// history follows, as the store writes it. ValidateHistory holds them;
// history import refuses a line that breaks one, and check reports a
// stored history that does.

// HistoryRoles are the author roles a version may name: Role's names,
// and "" where unknown.
var HistoryRoles = []string{"", RoleReader.String(), RoleEditor.String(), RoleReviewer.String(), RoleAdmin.String()}

// ValidAuthor says why name cannot be the author of a version, or "":
// 1 to MaxTokenNameLen bytes of UTF-8 with no control character
// (IsControl).
func ValidAuthor(name string) string {
	if name == "" {
		return "no author"
	}
	if len(name) > MaxTokenNameLen {
		return fmt.Sprintf("an author of %d bytes, more than the limit of %d", len(name), MaxTokenNameLen)
	}
	if !utf8.ValidString(name) {
		return "an author that is not UTF-8"
	}
	for _, r := range name {
		if IsControl(r) {
			return fmt.Sprintf("an author with the control character U+%04X", r)
		}
	}
	return ""
}

// HistoryAllowances are what a history may do beyond the grammar's
// strictest form, as an export line says of it (HistoryAllowancesOf) and a
// store allows (its compactions, the logs it followed).
type HistoryAllowances struct {
	// Gaps: versions may be missing, the first one too (history compact
	// removed them, or the store followed a log that keeps only each
	// incident's latest change); they still increase.
	Gaps bool `json:"gaps,omitempty"`
	// Unordered: a version's time may be before the one before it (the
	// versions were stamped by more than one clock: a cluster's nodes).
	Unordered bool `json:"unordered,omitempty"`
}

// HistoryAllowancesOf returns the allowances versions need: what export
// --history says of a history so that it imports again.
func HistoryAllowancesOf(versions []IncidentVersion) HistoryAllowances {
	var a HistoryAllowances
	var last time.Time
	for k, v := range versions {
		switch {
		case k == 0 && v.Version != 1 && v.Action != ActionImport:
			a.Gaps = true
		case k > 0 && v.Version != versions[k-1].Version+1:
			a.Gaps = true
		}
		if t, err := ParseTimestamp(v.At); err == nil {
			if t.Before(last) {
				a.Unordered = true
			}
			last = t
		}
	}
	return a
}

// ValidateHistory checks the history of incident id, its versions oldest
// first, each with its record (nil for a tombstone and for content purged
// or compacted away):
//
//   - versions are dense, the first 1 unless it is an IMPORT (a record
//     imported with the version it carried); with allow.Gaps they only
//     increase;
//   - each version's time is RFC 3339 and, but with allow.Unordered, none
//     is before the one before;
//   - its author is valid (ValidAuthor), its role one of HistoryRoles, its
//     action one of the actions;
//   - a record is the incident's own at that version; the last version
//     has a record unless it is a tombstone, and a tombstone has none;
//   - a tombstone (deleted) is a DELETE, a MERGE into another incident or
//     a PURGE of a deleted incident;
//     a DELETE is a tombstone of a live incident; after a tombstone comes
//     a RESTORE or a PURGE;
//   - a RESTORE follows a version; a PURGE names an earlier version
//     (target) and that version, when present, has no record left; only
//     RESTORE and PURGE name a target, always an earlier version.
//
// It returns one EINVALID error per problem, its field
// ["history", index, member] and its message naming the id and version.
func ValidateHistory(id string, versions []IncidentVersion, allow HistoryAllowances) Errors {
	var es Errors
	bad := func(k int, member string, format string, args ...any) {
		es = append(es, FieldErrorf(EINVALID, []string{HistoryMember, strconv.Itoa(k), member},
			"incident %s version %d: %s", id, versions[k].Version, fmt.Sprintf(format, args...)))
	}
	if len(versions) == 0 {
		return Errors{FieldErrorf(EINVALID, []string{HistoryMember}, "incident %s has no history", id)}
	}
	byVersion := make(map[int]int, len(versions))
	var lastAt time.Time
	for k, v := range versions {
		byVersion[v.Version] = k
		first := k == 0
		var prev *IncidentVersion
		if !first {
			prev = &versions[k-1]
		}
		switch {
		case first && v.Version < 1:
			bad(k, "version", "versions start at 1")
		case first && v.Version > 1 && v.Action != ActionImport && !allow.Gaps:
			bad(k, "version", "the first version is %d, not 1, and is no IMPORT of a record that carried it, in a history without gaps", v.Version)
		case !first && v.Version <= prev.Version:
			bad(k, "version", "version %d follows version %d: versions increase", v.Version, prev.Version)
		case !first && v.Version != prev.Version+1 && !allow.Gaps:
			bad(k, "version", "version %d follows version %d: versions are dense in a history without gaps", v.Version, prev.Version)
		}
		if t, err := ParseTimestamp(v.At); err != nil {
			bad(k, "at", "at %v", err)
		} else {
			if !lastAt.IsZero() && t.Before(lastAt) && !allow.Unordered {
				bad(k, "at", "at %s is before the version before it", v.At)
			}
			lastAt = t
		}
		if why := ValidAuthor(v.Author); why != "" {
			bad(k, "author", "%s", why)
		}
		if !slices.Contains(HistoryRoles, v.AuthorRole) {
			bad(k, "role", "role %q is none of reader, editor, reviewer and admin", v.AuthorRole)
		}
		if !v.Action.IsValid() {
			bad(k, "action", "unknown action %q", v.Action)
		}
		hasRecord := len(v.Record) > 0 && string(v.Record) != "null"
		if hasRecord {
			var head struct {
				ID      string `json:"id"`
				Version int    `json:"version"`
			}
			if err := json.Unmarshal(v.Record, &head); err != nil {
				bad(k, "record", "the record does not decode: %v", err)
			} else if head.ID != id || max(head.Version, 1) != v.Version {
				bad(k, "record", "its record is %s version %d", head.ID, max(head.Version, 1))
			}
		}
		prevDeleted := prev != nil && prev.Deleted
		switch {
		case v.Deleted && hasRecord:
			bad(k, "record", "a tombstone (deleted) carries a record")
		case !v.Deleted && !hasRecord && k == len(versions)-1:
			bad(k, "record", "the last version is no delete and has no record: the incident would be live without one")
		}
		switch {
		case v.Deleted && v.Action != ActionDelete && v.Action != ActionPurge && v.Action != ActionMerge:
			bad(k, "deleted", "a tombstone (deleted) is a DELETE, a MERGE or a PURGE of a deleted incident, not %s", v.Action)
		case v.Action == ActionDelete && !v.Deleted:
			bad(k, "deleted", "a DELETE is a tombstone (deleted: true)")
		case v.Action == ActionDelete && (first && v.Version == 1 || prevDeleted):
			bad(k, "action", "a DELETE of an incident that is not live")
		case v.Action == ActionPurge && v.Deleted && !prevDeleted && prev != nil:
			bad(k, "deleted", "a PURGE of a live incident is no tombstone")
		case prevDeleted && v.Action != ActionRestore && v.Action != ActionPurge:
			bad(k, "action", "%s of a deleted incident: after a delete comes a RESTORE or a PURGE", v.Action)
		case prevDeleted && v.Action == ActionPurge && !v.Deleted:
			bad(k, "deleted", "a PURGE of a deleted incident is a tombstone again")
		}
		switch v.Action {
		case ActionRestore:
			if first && v.Version == 1 {
				bad(k, "action", "a RESTORE of an incident with no earlier version")
			}
		case ActionPurge:
			if v.Target == 0 {
				bad(k, "target", "a PURGE names the version it purged (target)")
			}
		}
		if v.Target != 0 {
			switch {
			case v.Action != ActionRestore && v.Action != ActionPurge:
				bad(k, "target", "only a RESTORE or a PURGE names a target, not %s", v.Action)
			case v.Target < 1 || v.Target >= v.Version:
				bad(k, "target", "target %d is no earlier version", v.Target)
			}
		}
	}
	// A purged version keeps no record.
	for k, v := range versions {
		if v.Action != ActionPurge || v.Target < 1 || v.Target >= v.Version {
			continue
		}
		if t, ok := byVersion[v.Target]; ok && len(versions[t].Record) > 0 && string(versions[t].Record) != "null" {
			bad(k, "target", "version %d, which it purged, still has its record", v.Target)
		}
	}
	return es
}
