package storage

import (
	"context"
	"encoding/json"
	"fmt"
	"strconv"

	"github.com/RoaringBitmap/roaring/v2"
	bolt "go.etcd.io/bbolt"

	"github.com/incidentlib/incidentlib"
)

// ImportCheck is the first pass of a batched import: it checks each record
// as ImportIncidents would (Validate, ValidateTerms, the record size limit,
// no id twice) and keeps what the checks across records need (ids, links
// to ids not seen yet, recurrence links, organizations), not the records.
// Finish checks the links, recurrence cycles and organizations against the
// store.
type ImportCheck struct {
	db       *DB
	maxBytes int
	ids      *roaring.Bitmap
	links    []pendingLink
	rec      map[uint32]uint32 // recurrence_of of the records that have one
	orgName  map[string]string // slug -> name, as the import gives them
	orgSlug  map[string]string // folded name -> slug, as the import gives them
	records  int
}

type pendingLink struct {
	from, to uint32
	k        int32 // index in related, or -1 for recurrence_of
}

// NewImportCheck starts the checks of an import whose records may be up to
// maxBytes bytes each (0: incidentlib.DefaultMaxRecordBytes).
func (st Incidents) NewImportCheck(maxBytes int) *ImportCheck {
	return &ImportCheck{db: st.db, maxBytes: maxBytes, ids: roaring.New(), rec: map[uint32]uint32{},
		orgName: map[string]string{}, orgSlug: map[string]string{}}
}

// Records returns how many records passed Add.
func (c *ImportCheck) Records() int { return c.records }

// Add checks one record of size bytes (its IL-JSON as read). It returns
// the record's problems as an EINVALID error list, messages naming the
// incident; a record with problems is not counted in the import.
func (c *ImportCheck) Add(inc *incidentlib.Incident, size int) error { return c.add(inc, size, false) }

// AddValidated is Add for a record that inc.Validate() passed already (the
// importer's checks run it, on several cores): the rest of Add's checks.
func (c *ImportCheck) AddValidated(inc *incidentlib.Incident, size int) error {
	return c.add(inc, size, true)
}

func (c *ImportCheck) add(inc *incidentlib.Incident, size int, validated bool) error {
	var es incidentlib.Errors
	add := func(err error) {
		for _, e := range incidentlib.ErrorList(err) {
			es = append(es, &incidentlib.Error{Code: e.Code, Field: e.Field, Message: fmt.Sprintf("incident %s: %s", inc.ID, e.Message)})
		}
	}
	if err := incidentlib.CheckRecordSize(inc.ID, size, c.maxBytes); err != nil {
		return err
	}
	var err error
	if !validated {
		err = inc.Validate()
	}
	if err == nil {
		err = inc.ValidateTerms(c.db.Taxonomies().Taxonomy())
	}
	add(err)
	n, ok := incidentlib.ParseID(inc.ID)
	if ok && c.ids.Contains(n) {
		es = append(es, incidentlib.FieldErrorf(incidentlib.EINVALID, []string{"id"}, "incident %s appears twice in the import", inc.ID))
	}
	if inc.OrgSlug != "" {
		if name, ok := c.orgName[inc.OrgSlug]; ok && name != inc.Org {
			es = append(es, incidentlib.FieldErrorf(incidentlib.EINVALID, []string{"org"},
				"incident %s: org_slug %q is named %q by another record of the import, and %q here", inc.ID, inc.OrgSlug, name, inc.Org))
		}
		if slug, ok := c.orgSlug[foldName(inc.Org)]; ok && slug != inc.OrgSlug {
			es = append(es, incidentlib.FieldErrorf(incidentlib.EINVALID, []string{"org_slug"},
				"incident %s: organization %q has org_slug %q in another record of the import, and %q here", inc.ID, inc.Org, slug, inc.OrgSlug))
		}
	}
	if len(es) > 0 {
		return es
	}
	c.records++
	c.ids.Add(n)
	c.orgName[inc.OrgSlug] = inc.Org
	c.orgSlug[foldName(inc.Org)] = inc.OrgSlug
	for k, r := range inc.Related {
		if t, _ := incidentlib.ParseID(r); !c.ids.Contains(t) {
			c.links = append(c.links, pendingLink{from: n, to: t, k: int32(k)})
		}
	}
	if inc.RecurrenceOf != "" {
		t, _ := incidentlib.ParseID(inc.RecurrenceOf)
		c.rec[n] = t
		if !c.ids.Contains(t) {
			c.links = append(c.links, pendingLink{from: n, to: t, k: -1})
		}
	}
	return nil
}

// Finish checks, against the store, what no single record shows: links to
// incidents neither in the import nor in the store (unless
// Options.UpstreamLinks), recurrence cycles, and organizations whose name
// or slug the store holds otherwise for incidents the import does not
// rewrite. It returns an EINVALID error list, or nil.
func (c *ImportCheck) Finish(ctx context.Context) error {
	var es incidentlib.Errors
	err := c.db.view(ctx, func(tx *bolt.Tx) error {
		ib := tx.Bucket(bucketIncidents)
		for _, l := range c.links {
			if c.ids.Contains(l.to) || c.db.upstreamLinks || ib.Get(u32key(l.to)) != nil {
				continue
			}
			from, to := incidentlib.FormatID(l.from), incidentlib.FormatID(l.to)
			if l.k < 0 {
				es = append(es, incidentlib.FieldErrorf(incidentlib.EINVALID, []string{"recurrence_of"},
					"incident %s: recurrence_of %s is not in the library", from, to))
			} else {
				es = append(es, incidentlib.FieldErrorf(incidentlib.EINVALID, []string{"related", strconv.Itoa(int(l.k))},
					"incident %s: related[%d] %s is not in the library", from, l.k, to))
			}
		}
		cyc, err := c.cycles(tx)
		if err != nil {
			return err
		}
		es = append(es, cyc...)
		es = append(es, c.orgConflicts(tx)...)
		return nil
	})
	if err != nil {
		return err
	}
	if len(es) > 0 {
		return es
	}
	return nil
}

// cycles finds recurrence chains that come back, through the records of
// the import and, beyond them, the stored ones. Each incident is walked
// once: the time is linear in the chains' lengths.
func (c *ImportCheck) cycles(tx *bolt.Tx) (incidentlib.Errors, error) {
	const (
		walking = 1
		done    = 2
	)
	state := make(map[uint32]uint8, len(c.rec))
	parent := func(n uint32) (uint32, bool, error) {
		if c.ids.Contains(n) {
			t, ok := c.rec[n]
			return t, ok, nil
		}
		inc, err := c.db.getIncident(tx, n)
		if err != nil || inc == nil || inc.RecurrenceOf == "" {
			return 0, false, err
		}
		t, ok := incidentlib.ParseID(inc.RecurrenceOf)
		return t, ok, nil
	}
	var es incidentlib.Errors
	var path []uint32
	for start := range c.rec {
		if state[start] != 0 {
			continue
		}
		path = path[:0]
		n, cycle := start, false
		for {
			if s := state[n]; s == done {
				break
			} else if s == walking {
				cycle = true
				break
			}
			state[n] = walking
			path = append(path, n)
			t, ok, err := parent(n)
			if err != nil {
				return nil, err
			}
			if !ok {
				break
			}
			n = t
		}
		for _, p := range path {
			state[p] = done
		}
		if cycle {
			es = append(es, incidentlib.FieldErrorf(incidentlib.EINVALID, []string{"recurrence_of"},
				"incident %s: recurrence_of %s forms a cycle of recurrences", incidentlib.FormatID(n), incidentlib.FormatID(c.recOf(tx, n))))
		}
	}
	return es, nil
}

func (c *ImportCheck) recOf(tx *bolt.Tx, n uint32) uint32 {
	if t, ok := c.rec[n]; ok {
		return t
	}
	if inc, _ := c.db.getIncident(tx, n); inc != nil {
		t, _ := incidentlib.ParseID(inc.RecurrenceOf)
		return t
	}
	return 0
}

// orgConflicts finds the organizations of the import that the store holds
// under another name or slug for incidents the import does not rewrite
// (checkOrg, for the whole import at once).
func (c *ImportCheck) orgConflicts(tx *bolt.Tx) incidentlib.Errors {
	ob := tx.Bucket(bucketOrgs)
	pb := tx.Bucket(bucketPostings)
	usedByOthers := func(slug string) bool {
		v := pb.Get([]byte(postOrg(slug)))
		if v == nil {
			return false
		}
		bm := roaring.New()
		if err := bm.UnmarshalBinary(v); err != nil {
			return true
		}
		bm.AndNot(c.ids)
		return !bm.IsEmpty()
	}
	stored := map[string][]string{} // folded name -> stored slugs
	_ = ob.ForEach(func(k, v []byte) error {
		var o incidentlib.Organization
		if json.Unmarshal(v, &o) == nil {
			stored[foldName(o.Name)] = append(stored[foldName(o.Name)], string(k))
		}
		return nil
	})
	var es incidentlib.Errors
	for slug, name := range c.orgName {
		if v := ob.Get([]byte(slug)); v != nil {
			var o incidentlib.Organization
			if json.Unmarshal(v, &o) == nil && o.Name != name && usedByOthers(slug) {
				es = append(es, incidentlib.FieldErrorf(incidentlib.EINVALID, []string{"org"},
					"org_slug %q belongs to organization %q, but the import names it %q", slug, o.Name, name))
			}
		}
		for _, other := range stored[foldName(name)] {
			if other != slug && usedByOthers(other) {
				es = append(es, incidentlib.FieldErrorf(incidentlib.EINVALID, []string{"org_slug"},
					"organization %q is in the library as org_slug %q, but the import gives org_slug %q", name, other, slug))
			}
		}
	}
	return es
}
