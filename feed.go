package incidentlib

import (
	"bufio"
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"strconv"
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

// WriteChangeLine writes one feed line.
func WriteChangeLine(bw *bufio.Writer, seq uint64, deleted bool, id string, inc *Incident) error {
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
func ParseChangeLine(line []byte) (Change, error) {
	rest, ok := bytes.CutPrefix(bytes.TrimSpace(line), feedSeqPrefix)
	if !ok {
		return Change{}, errors.New(`a change line starts with {"seq":`)
	}
	end := bytes.IndexByte(rest, ',')
	if end < 0 {
		return Change{}, errors.New("a change line has no deleted member")
	}
	seq, err := strconv.ParseUint(string(rest[:end]), 10, 64)
	if err != nil {
		return Change{}, fmt.Errorf("change line sequence %q is not a whole number", rest[:end])
	}
	rest = rest[end:]
	obj := func(members []byte) []byte {
		b := make([]byte, 0, len(members)+1)
		return append(append(b, '{'), members...)
	}
	switch {
	case bytes.HasPrefix(rest, feedDeleted):
		var t struct {
			ID string `json:"id"`
		}
		if err := json.Unmarshal(obj(rest[len(feedDeleted):]), &t); err != nil || t.ID == "" {
			return Change{}, fmt.Errorf("the tombstone of change %d does not name an incident", seq)
		}
		return Change{Seq: seq, Deleted: true, ID: t.ID}, nil
	case bytes.HasPrefix(rest, feedRecord):
		// The primary wrote canonical IL-JSON: decode it without the
		// duplicate-member walk of an import.
		inc := new(Incident)
		if err := json.Unmarshal(obj(rest[len(feedRecord):]), inc); err != nil {
			return Change{}, fmt.Errorf("the record of change %d: %s", seq, jsonErrorWhere(rest, err))
		}
		return Change{Seq: seq, ID: inc.ID, Incident: inc}, nil
	}
	return Change{}, fmt.Errorf("change line %d: \"deleted\" must follow \"seq\"", seq)
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
					if _, ok := ParseID(string(r[:q])); ok {
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
