// Package changefeed is the wire format of the change feed (GET
// /api/v1/changes): its writer is the REST API (server/restapi), its
// reader a replica (replica/fetch.go). It imports the domain and the
// codec only.
package changefeed

import (
	"bufio"
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"strconv"

	"github.com/incidentlib/incidentlib"
	"github.com/incidentlib/incidentlib/iljson"
)

// The change feed (GET /api/v1/changes) is JSONL: one line per change. A
// record line is the incident's canonical IL-JSON with "seq" and "deleted"
// first; a tombstone carries only the id:
//
//	{"seq":12,"deleted":false,"id":"IL-0213","org":"Roblox",...}
//	{"seq":13,"deleted":true,"id":"IL-0005"}
//
// The two members come first and in this exact spelling, so a reader takes
// them off the front and keeps the record byte for byte, even one that has
// extra fields of the same names.

// The history feed (a replica's or an admin's token: every version, not
// only the latest) adds the version's history entry as the member "entry"
// right after "deleted", before the record's members or the tombstone's
// id:
//
//	{"seq":14,"deleted":false,"entry":{"version":3,"action":"UPDATE",...},"id":"IL-0213",...}
//
// A version whose record was purged carries "purged":true in its entry and
// only the id.

// feedEntry is the wire form of a history entry on the feed.
type feedEntry struct {
	Version int                      `json:"version"`
	Action  incidentlib.ChangeAction `json:"action"`
	At      string                   `json:"at"`
	Author  string                   `json:"author"`
	Role    string                   `json:"role,omitempty"`
	Changed []string                 `json:"changed,omitempty"`
	Comment string                   `json:"comment,omitempty"`
	Target  int                      `json:"target,omitempty"`
	Purged  bool                     `json:"purged,omitempty"`
	// PurgedVersions are the versions a PURGE removed the content of
	// (IncidentVersion.Purged): a replica records the same list.
	PurgedVersions []int `json:"purged_versions,omitempty"`
}

// WriteVersionLine writes one line of the history feed: c's sequence,
// its entry (c.Entry) and its record's canonical IL-JSON (c.Record; nil
// for a tombstone or a purged version).
func WriteVersionLine(bw *bufio.Writer, c incidentlib.Change) error {
	if c.Entry == nil {
		return WriteRawChangeLine(bw, c.Seq, c.Deleted, c.ID, c.Record)
	}
	e := c.Entry
	purged := !c.Deleted && (len(c.Record) < 2 || c.Record[0] != '{')
	eb, err := json.Marshal(feedEntry{Version: e.Version, Action: e.Action, At: e.At, Author: e.Author, Role: e.AuthorRole,
		Changed: e.ChangedFields, Comment: e.Comment, Target: e.Target, Purged: purged, PurgedVersions: e.Purged})
	if err != nil {
		return err
	}
	bw.WriteString(`{"seq":`)
	bw.WriteString(strconv.FormatUint(c.Seq, 10))
	if c.Deleted {
		bw.WriteString(`,"deleted":true,"entry":`)
	} else {
		bw.WriteString(`,"deleted":false,"entry":`)
	}
	bw.Write(eb)
	if c.Deleted || purged {
		bw.WriteString(`,"id":`)
		b, _ := json.Marshal(c.ID)
		bw.Write(b)
		_, err := bw.WriteString("}\n")
		return err
	}
	bw.WriteByte(',')
	bw.Write(c.Record[1:])
	return bw.WriteByte('\n')
}

// cutEntry takes a leading "entry" member off the members of a feed line.
func cutEntry(rest []byte) (*feedEntry, []byte, error) {
	r, ok := bytes.CutPrefix(rest, []byte(`"entry":`))
	if !ok {
		return nil, rest, nil
	}
	dec := json.NewDecoder(bytes.NewReader(r))
	var e feedEntry
	if err := dec.Decode(&e); err != nil {
		return nil, nil, fmt.Errorf("the history entry: %w", err)
	}
	r = r[dec.InputOffset():]
	if len(r) == 0 || r[0] != ',' {
		return nil, nil, errors.New(`the history entry must be followed by the record's members or "id"`)
	}
	return &e, r[1:], nil
}

func (e *feedEntry) change(c *incidentlib.Change) {
	if e == nil {
		return
	}
	c.Version, c.Action = e.Version, e.Action
	c.Entry = &incidentlib.IncidentVersion{ID: c.ID, Version: e.Version, At: e.At, Author: e.Author, AuthorRole: e.Role, Action: e.Action,
		ChangedFields: e.Changed, Comment: e.Comment, Deleted: c.Deleted, Target: e.Target, Purged: e.PurgedVersions}
}

// WriteChangeLine writes one feed line.
func WriteChangeLine(bw *bufio.Writer, seq uint64, deleted bool, id string, inc *incidentlib.Incident) error {
	bw.WriteString(`{"seq":`)
	bw.WriteString(strconv.FormatUint(seq, 10))
	if deleted || inc == nil {
		bw.WriteString(`,"deleted":true,"id":`)
		b, _ := json.Marshal(id)
		bw.Write(b)
		_, err := bw.WriteString("}\n")
		return err
	}
	b, err := json.Marshal(inc)
	if err != nil {
		return err
	}
	bw.WriteString(`,"deleted":false,`)
	bw.Write(b[1:]) // the record's members and its closing brace
	return bw.WriteByte('\n')
}

// WriteRawChangeLine writes one feed line from a record's canonical IL-JSON
// as the store holds it (nil for a tombstone).
func WriteRawChangeLine(bw *bufio.Writer, seq uint64, deleted bool, id string, record []byte) error {
	if deleted || len(record) < 2 || record[0] != '{' {
		return WriteChangeLine(bw, seq, true, id, nil)
	}
	bw.WriteString(`{"seq":`)
	bw.WriteString(strconv.FormatUint(seq, 10))
	bw.WriteString(`,"deleted":false,`)
	bw.Write(record[1:])
	return bw.WriteByte('\n')
}

var (
	feedSeqPrefix = []byte(`{"seq":`)
	feedDeleted   = []byte(`,"deleted":true,`)
	feedRecord    = []byte(`,"deleted":false,`)
)

// ParseChangeLine reads one line of the change feed: a Change with the
// decoded record (Incident) of a record line, none for a tombstone.
func ParseChangeLine(line []byte) (incidentlib.Change, error) {
	rest, ok := bytes.CutPrefix(bytes.TrimSpace(line), feedSeqPrefix)
	if !ok {
		return incidentlib.Change{}, errors.New(`a change line starts with {"seq":`)
	}
	end := bytes.IndexByte(rest, ',')
	if end < 0 {
		return incidentlib.Change{}, errors.New("a change line has no deleted member")
	}
	seq, err := strconv.ParseUint(string(rest[:end]), 10, 64)
	if err != nil {
		return incidentlib.Change{}, fmt.Errorf("change line sequence %q is not a whole number", rest[:end])
	}
	rest = rest[end:]
	obj := func(members []byte) []byte {
		b := make([]byte, 0, len(members)+1)
		return append(append(b, '{'), members...)
	}
	deleted := bytes.HasPrefix(rest, feedDeleted)
	if !deleted && !bytes.HasPrefix(rest, feedRecord) {
		return incidentlib.Change{}, fmt.Errorf("change line %d: \"deleted\" must follow \"seq\"", seq)
	}
	members := rest[len(feedRecord):]
	if deleted {
		members = rest[len(feedDeleted):]
	}
	entry, members, err := cutEntry(members)
	if err != nil {
		return incidentlib.Change{}, fmt.Errorf("change line %d: %w", seq, err)
	}
	if deleted || (entry != nil && entry.Purged) {
		var t struct {
			ID string `json:"id"`
		}
		if err := json.Unmarshal(obj(members), &t); err != nil || t.ID == "" {
			return incidentlib.Change{}, fmt.Errorf("the tombstone of change %d does not name an incident", seq)
		}
		c := incidentlib.Change{Seq: seq, Deleted: deleted, ID: t.ID}
		entry.change(&c)
		return c, nil
	}
	// The primary wrote canonical IL-JSON: decode it without the
	// duplicate-member walk of an import.
	inc := new(incidentlib.Incident)
	if err := json.Unmarshal(obj(members), inc); err != nil {
		return incidentlib.Change{}, fmt.Errorf("the record of change %d: %s", seq, iljson.ErrorWhere(members, err))
	}
	c := incidentlib.Change{Seq: seq, ID: inc.ID, Incident: inc}
	entry.change(&c)
	return c, nil
}

// ParseChangeHead reads the start of a change line, as far as it goes: the
// sequence, and the incident id when "id" is the first member after
// "deleted" (as the primary writes it; "" otherwise). A reader that skips a
// line too long to read whole still learns which change it skipped.
func ParseChangeHead(line []byte) (seq uint64, id string, err error) {
	rest, ok := bytes.CutPrefix(bytes.TrimLeft(line, " \t\r\n"), feedSeqPrefix)
	if !ok {
		return 0, "", errors.New(`a change line starts with {"seq":`)
	}
	end := bytes.IndexByte(rest, ',')
	if end < 0 {
		return 0, "", errors.New("a change line has no deleted member")
	}
	seq, err = strconv.ParseUint(string(rest[:end]), 10, 64)
	if err != nil {
		return 0, "", fmt.Errorf("change line sequence %q is not a whole number", rest[:end])
	}
	rest = rest[end:]
	for _, p := range [][]byte{feedDeleted, feedRecord} {
		if r, ok := bytes.CutPrefix(rest, p); ok {
			if r, ok = bytes.CutPrefix(r, []byte(`"id":"`)); ok {
				if q := bytes.IndexByte(r, '"'); q > 0 && q <= 16 {
					if _, ok := incidentlib.ParseID(string(r[:q])); ok {
						id = string(r[:q])
					}
				}
			}
		}
	}
	return seq, id, nil
}

// ChangeRecordSize is the size in bytes of the record a change line
// carries, as its IL-JSON: the line without "seq" and "deleted". It is 0
// for a line that carries no record.
func ChangeRecordSize(line []byte) int {
	line = bytes.TrimSpace(line)
	i := bytes.Index(line, feedRecord)
	if i < 0 || !bytes.HasPrefix(line, feedSeqPrefix) {
		return 0
	}
	return len(line) - (i + len(feedRecord)) + 1
}
