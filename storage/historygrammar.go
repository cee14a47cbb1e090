package storage

import (
	"encoding/json"
	"fmt"
	"slices"
	"strconv"
	"time"

	"github.com/incidentlib/incidentlib"
)

// The history grammar (docs/history.md): what an imported history and a
// stored one must be, checked by history import (historyimport.go) and by
// check (historycheck.go), the two places a history enters or is read
// whole. The allowances it knows are the root's incidentlib.HistoryAllowances.

// historyAllowancesOf returns the allowances versions need: what export
// --history says of a history so that it imports again.
func historyAllowancesOf(versions []incidentlib.IncidentVersion) incidentlib.HistoryAllowances {
	var a incidentlib.HistoryAllowances
	var last time.Time
	for k, v := range versions {
		switch {
		case k == 0 && v.Version != 1 && v.Action != incidentlib.ActionImport:
			a.Gaps = true
		case k > 0 && v.Version != versions[k-1].Version+1:
			a.Gaps = true
		}
		if t, err := incidentlib.ParseTimestamp(v.At); err == nil {
			if t.Before(last) {
				a.Unordered = true
			}
			last = t
		}
	}
	return a
}

// validateHistory checks the history of incident id, its versions oldest
// first, each with its record (nil for a tombstone and for content purged
// or compacted away):
//
//   - versions are dense, the first 1 unless it is an IMPORT (a record
//     imported with the version it carried); with allow.Gaps they only
//     increase;
//   - each version's time is RFC 3339 and, but with allow.Unordered, none
//     is before the one before;
//   - its author is valid (incidentlib.ValidAuthor), its role one of incidentlib.HistoryRoles, its
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
// It returns one incidentlib.EINVALID error per problem, its field
// ["history", index, member] and its message naming the id and version.
func validateHistory(id string, versions []incidentlib.IncidentVersion, allow incidentlib.HistoryAllowances) incidentlib.Errors {
	var es incidentlib.Errors
	bad := func(k int, member string, format string, args ...any) {
		es = append(es, incidentlib.FieldErrorf(incidentlib.EINVALID, []string{incidentlib.HistoryMember, strconv.Itoa(k), member},
			"incident %s version %d: %s", id, versions[k].Version, fmt.Sprintf(format, args...)))
	}
	if len(versions) == 0 {
		return incidentlib.Errors{incidentlib.FieldErrorf(incidentlib.EINVALID, []string{incidentlib.HistoryMember}, "incident %s has no history", id)}
	}
	byVersion := make(map[int]int, len(versions))
	var lastAt time.Time
	for k, v := range versions {
		byVersion[v.Version] = k
		first := k == 0
		var prev *incidentlib.IncidentVersion
		if !first {
			prev = &versions[k-1]
		}
		switch {
		case first && v.Version < 1:
			bad(k, "version", "versions start at 1")
		case first && v.Version > 1 && v.Action != incidentlib.ActionImport && !allow.Gaps:
			bad(k, "version", "the first version is %d, not 1, and is no IMPORT of a record that carried it, in a history without gaps", v.Version)
		case !first && v.Version <= prev.Version:
			bad(k, "version", "version %d follows version %d: versions increase", v.Version, prev.Version)
		case !first && v.Version != prev.Version+1 && !allow.Gaps:
			bad(k, "version", "version %d follows version %d: versions are dense in a history without gaps", v.Version, prev.Version)
		}
		if t, err := incidentlib.ParseTimestamp(v.At); err != nil {
			bad(k, "at", "at %v", err)
		} else {
			if !lastAt.IsZero() && t.Before(lastAt) && !allow.Unordered {
				bad(k, "at", "at %s is before the version before it", v.At)
			}
			lastAt = t
		}
		if why := incidentlib.ValidAuthor(v.Author); why != "" {
			bad(k, "author", "%s", why)
		}
		if !slices.Contains(incidentlib.HistoryRoles, v.AuthorRole) {
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
		case v.Deleted && v.Action != incidentlib.ActionDelete && v.Action != incidentlib.ActionPurge && v.Action != incidentlib.ActionMerge:
			bad(k, "deleted", "a tombstone (deleted) is a DELETE, a MERGE or a PURGE of a deleted incident, not %s", v.Action)
		case v.Action == incidentlib.ActionDelete && !v.Deleted:
			bad(k, "deleted", "a DELETE is a tombstone (deleted: true)")
		case v.Action == incidentlib.ActionDelete && (first && v.Version == 1 || prevDeleted):
			bad(k, "action", "a DELETE of an incident that is not live")
		case v.Action == incidentlib.ActionPurge && v.Deleted && !prevDeleted && prev != nil:
			bad(k, "deleted", "a PURGE of a live incident is no tombstone")
		case prevDeleted && v.Action != incidentlib.ActionRestore && v.Action != incidentlib.ActionPurge:
			bad(k, "action", "%s of a deleted incident: after a delete comes a RESTORE or a PURGE", v.Action)
		case prevDeleted && v.Action == incidentlib.ActionPurge && !v.Deleted:
			bad(k, "deleted", "a PURGE of a deleted incident is a tombstone again")
		}
		switch v.Action {
		case incidentlib.ActionRestore:
			if first && v.Version == 1 {
				bad(k, "action", "a RESTORE of an incident with no earlier version")
			}
		case incidentlib.ActionPurge:
			if v.Target == 0 {
				bad(k, "target", "a PURGE names the version it purged (target)")
			}
		}
		if v.Target != 0 {
			switch {
			case v.Action != incidentlib.ActionRestore && v.Action != incidentlib.ActionPurge:
				bad(k, "target", "only a RESTORE or a PURGE names a target, not %s", v.Action)
			case v.Target < 1 || v.Target >= v.Version:
				bad(k, "target", "target %d is no earlier version", v.Target)
			}
		}
	}
	// A purged version keeps no record.
	for k, v := range versions {
		if v.Action != incidentlib.ActionPurge || v.Target < 1 || v.Target >= v.Version {
			continue
		}
		if t, ok := byVersion[v.Target]; ok && len(versions[t].Record) > 0 && string(versions[t].Record) != "null" {
			bad(k, "target", "version %d, which it purged, still has its record", v.Target)
		}
	}
	return es
}
