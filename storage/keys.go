package storage

import (
	"encoding/base64"
	"encoding/binary"
	"fmt"
	"slices"
	"strconv"
	"time"

	"github.com/incidentlib/incidentlib"
)

// sortKey holds what orders an incident, so that its order keys can be
// rebuilt without decoding the record.
type sortKey struct {
	dated   bool
	days    uint32 // days since 0001-01-01
	hasUpd  bool
	updated uint64 // unix nanoseconds, sign bit flipped so it sorts
}

const sortKeyLen = 1 + 4 + 8

// unixEpochDays is the number of days from 0001-01-01 to 1970-01-01.
const unixEpochDays = 719162

// daysOf returns the days since 0001-01-01 of a date at midnight UTC.
func daysOf(t time.Time) uint32 { return uint32(t.Unix()/86400 + unixEpochDays) }

func sortKeyOf(inc *incidentlib.Incident) sortKey {
	var k sortKey
	if t, err := incidentlib.ParseDate(inc.Date); inc.Date != "" && err == nil {
		k.dated, k.days = true, daysOf(t)
	}
	if t, err := incidentlib.ParseTimestamp(inc.UpdatedAt); inc.UpdatedAt != "" && err == nil {
		k.hasUpd, k.updated = true, uint64(t.UnixNano())^(1<<63)
	}
	return k
}

func (k sortKey) encode() []byte {
	b := make([]byte, sortKeyLen)
	if k.dated {
		b[0] |= 1
	}
	if k.hasUpd {
		b[0] |= 2
	}
	binary.BigEndian.PutUint32(b[1:], k.days)
	binary.BigEndian.PutUint64(b[5:], k.updated)
	return b
}

func decodeSortKey(b []byte) sortKey {
	if len(b) != sortKeyLen {
		return sortKey{}
	}
	return sortKey{dated: b[0]&1 != 0, days: binary.BigEndian.Uint32(b[1:]), hasUpd: b[0]&2 != 0, updated: binary.BigEndian.Uint64(b[5:])}
}

// Order bytes: the first byte of every key in the orders bucket.
const (
	ordDateAsc  = 'D'
	ordDateDesc = 'd'
	ordUpdAsc   = 'U'
	ordUpdDesc  = 'u'
	ordIDAsc    = 'I'
	ordIDDesc   = 'i'
)

var allOrders = []byte{ordDateAsc, ordDateDesc, ordUpdAsc, ordUpdDesc, ordIDAsc, ordIDDesc}

func orderByte(o incidentlib.IncidentOrder) (byte, error) {
	desc := o.Direction == incidentlib.Desc
	if o.Direction != "" && !o.Direction.IsValid() {
		return 0, incidentlib.Errorf(incidentlib.EINVALID, "unknown order direction %q", o.Direction)
	}
	switch o.Field {
	case incidentlib.OrderDate, "":
		if o.Direction == "" {
			return ordDateDesc, nil
		}
		return pick(desc, ordDateDesc, ordDateAsc), nil
	case incidentlib.OrderUpdatedAt:
		return pick(desc, ordUpdDesc, ordUpdAsc), nil
	case incidentlib.OrderID:
		return pick(desc, ordIDDesc, ordIDAsc), nil
	}
	return 0, incidentlib.Errorf(incidentlib.EINVALID, "unknown order field %q", o.Field)
}

func pick(c bool, a, b byte) byte {
	if c {
		return a
	}
	return b
}

// orderKey is the key of incident n in order ord, without the order byte.
// Keys sort in the order's sequence: the value (inverted for descending),
// then the number ascending; incidents without a value come last.
func orderKey(ord byte, n uint32, k sortKey) []byte {
	b := make([]byte, 0, 13)
	switch ord {
	case ordDateAsc, ordDateDesc:
		return valueKey(b, k.dated, uint64(k.days), 4, ord == ordDateDesc, n)
	case ordUpdAsc, ordUpdDesc:
		return valueKey(b, k.hasUpd, k.updated, 8, ord == ordUpdDesc, n)
	case ordIDDesc:
		return binary.BigEndian.AppendUint32(b, ^n)
	}
	return binary.BigEndian.AppendUint32(b, n)
}

// valueKey appends to b the order key of incident n by a value of width
// bytes (4: the date's days, 8: updated_at): 0, the value (inverted when
// desc), then the number; without a value, 1 and the number, so that
// those come last either way.
func valueKey(b []byte, has bool, v uint64, width int, desc bool, n uint32) []byte {
	if !has {
		return binary.BigEndian.AppendUint32(append(b, 1), n)
	}
	if desc {
		v = ^v
	}
	b = append(b, 0)
	if width == 4 {
		b = binary.BigEndian.AppendUint32(b, uint32(v))
	} else {
		b = binary.BigEndian.AppendUint64(b, v)
	}
	return binary.BigEndian.AppendUint32(b, n)
}

// numberOfOrderKey returns the incident number at the end of an order key.
func numberOfOrderKey(ord byte, key []byte) uint32 {
	n := binary.BigEndian.Uint32(key[len(key)-4:])
	if ord == ordIDDesc {
		n = ^n
	}
	return n
}

// Cursors are the order byte and the order key, base64url without padding,
// behind a version byte.
const cursorVersion = 1

func encodeCursor(ord byte, key []byte) string {
	return string(appendCursor(nil, ord, key))
}

func appendCursor(dst []byte, ord byte, key []byte) []byte {
	var a [64]byte
	return base64.RawURLEncoding.AppendEncode(dst, append(append(a[:0], cursorVersion, ord), key...))
}

// pageStrings returns the ids and the cursors of a page's order keys, each
// list cut from one string: seven allocations whatever the page's size,
// not three per incident.
func pageStrings(ord byte, keys [][]byte) (ids, cursors []string) {
	if len(keys) == 0 {
		return nil, nil
	}
	idEnds := make([]int, 2*len(keys)) // then the cursors' ends
	idb := make([]byte, 0, len(keys)*len("IL-0000"))
	cb := make([]byte, 0, len(keys)*base64.RawURLEncoding.EncodedLen(2+len(keys[0])))
	for i, k := range keys {
		idb = incidentlib.AppendID(idb, numberOfOrderKey(ord, k))
		idEnds[i] = len(idb)
		cb = appendCursor(cb, ord, k)
		idEnds[len(keys)+i] = len(cb)
	}
	ids = cut(string(idb), idEnds[:len(keys)])
	cursors = cut(string(cb), idEnds[len(keys):])
	return ids, cursors
}

// cut returns the pieces of s that end at ends.
func cut(s string, ends []int) []string {
	out := make([]string, len(ends))
	start := 0
	for i, e := range ends {
		out[i] = s[start:e]
		start = e
	}
	return out
}

func decodeCursorRaw(s string) ([]byte, error) {
	b, err := base64.RawURLEncoding.DecodeString(s)
	if err != nil || len(b) < 2 || b[0] != cursorVersion {
		return nil, incidentlib.Errorf(incidentlib.EBADCURSOR, "cursor %q is malformed", s)
	}
	return b, nil
}

func decodeCursor(ord byte, s string) ([]byte, error) {
	b, err := decodeCursorRaw(s)
	if err != nil {
		return nil, err
	}
	if b[1] != ord {
		return nil, incidentlib.Errorf(incidentlib.EBADCURSOR, "cursor %q was made for another order", s)
	}
	key := b[2:]
	if !validOrderKey(ord, key) {
		return nil, incidentlib.Errorf(incidentlib.EBADCURSOR, "cursor %q is malformed", s)
	}
	return key, nil
}

func validOrderKey(ord byte, key []byte) bool {
	switch ord {
	case ordDateAsc, ordDateDesc:
		return (len(key) == 9 && key[0] == 0) || (len(key) == 5 && key[0] == 1)
	case ordUpdAsc, ordUpdDesc:
		return (len(key) == 13 && key[0] == 0) || (len(key) == 5 && key[0] == 1)
	}
	return len(key) == 4
}

// Posting names: the keys of the postings bucket.
const (
	postAll        = "all"
	postReviewed   = "f\x00reviewed"
	postRecurrence = "f\x00recurrence" // has recurrence_of
	postHasRec     = "f\x00hasrec"     // some incident is a recurrence of it
	postDated      = "f\x00dated"
	prefixYear     = "y\x00"
	prefixOrg      = "o\x00" // the affected organization (org_slug)
	prefixRoleOrg  = "r\x00" // an organization of organization_roles (vendor, reporter)
	prefixVerif    = "v\x00" // verification, for every value but UNKNOWN
	prefixTerm     = "t\x00"
	prefixState    = "s\x00" // review state, for every state but DRAFT
)

// postState is the posting of review state s. DRAFT has none: it is every
// incident in none of the others.
func postState(s incidentlib.ReviewState) string { return prefixState + string(s) }

func postTerm(kind incidentlib.TermKind, slug string) string {
	return prefixTerm + string(kind) + "\x00" + slug
}
func postOrg(slug string) string { return prefixOrg + slug }
func postYear(y int) string      { return prefixYear + fmt.Sprintf("%04d", y) }

// postRoleOrg is the posting of the incidents that name the organization
// slug in organization_roles: it keeps the organization in the library (and
// resolvable by slug) without counting those incidents as its own.
func postRoleOrg(slug string) string { return prefixRoleOrg + slug }

// postVerification is the posting of verification v. UNKNOWN has none: it
// is every incident in none of the others, so a store written before
// verification existed needs no new posting.
func postVerification(v incidentlib.Verification) string { return prefixVerif + string(v) }

func yearOfPosting(name string) (int, bool) {
	if len(name) <= len(prefixYear) {
		return 0, false
	}
	y, err := strconv.Atoi(name[len(prefixYear):])
	return y, err == nil
}

// postingsOf lists every posting the record belongs to.
func postingsOf(inc *incidentlib.Incident) []string {
	p := []string{postAll, postOrg(inc.OrgSlug)}
	for _, t := range inc.Terms() {
		p = append(p, postTerm(t.Kind, t.Slug))
	}
	if inc.Review.ReviewedAt != "" {
		p = append(p, postReviewed)
	}
	if s := inc.State(); s != incidentlib.ReviewDraft {
		p = append(p, postState(s))
	}
	if v := inc.Verification.OrUnknown(); v != incidentlib.VerificationUnknown {
		p = append(p, postVerification(v))
	}
	for k, r := range inc.OrganizationRoles {
		if !slices.ContainsFunc(inc.OrganizationRoles[:k], func(o incidentlib.OrgRole) bool { return o.OrgSlug == r.OrgSlug }) {
			p = append(p, postRoleOrg(r.OrgSlug))
		}
	}
	if inc.RecurrenceOf != "" {
		p = append(p, postRecurrence)
	}
	if t, err := incidentlib.ParseDate(inc.Date); inc.Date != "" && err == nil {
		p = append(p, postDated, postYear(t.Year()))
	}
	p = append(p, durationPostings(inc)...) // durations.go
	p = append(p, periodPostingsOf(inc)...) // periods.go
	return p
}
