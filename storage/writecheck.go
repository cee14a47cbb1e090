package storage

import (
	"encoding/json"
	"slices"
	"strconv"
	"strings"

	"github.com/RoaringBitmap/roaring/v2"

	"github.com/incidentlib/incidentlib"
)

// The checks of a write before it is stored: the organizations it names
// and the incidents it links to.

// checkOrgs checks every organization incident n names (checkOrg).
func (w *writeTx) checkOrgs(n uint32, inc *incidentlib.Incident) error {
	for k, o := range inc.Organizations() {
		field := []string{"org_slug"}
		if k > 0 {
			field = []string{"organization_roles", strconv.Itoa(k - 1), "org_slug"}
		}
		if err := w.checkOrg(n, inc.ID, o.Name, o.Slug, field); err != nil {
			return err
		}
	}
	return nil
}

// checkOrg refuses incident n (id) if an organization it names (name,
// slug: the affected one or one of organization_roles, field the slug's
// path) belongs to an organization of another name, or the name is
// already stored under another slug, counting only incidents other than
// n (in either role). A slug and name stored together cost one lookup;
// only a new pair reads the organization names, once per transaction.
func (w *writeTx) checkOrg(n uint32, id, name, slug string, field []string) error {
	usedByOthers := func(slug string) bool {
		for _, bm := range []*roaring.Bitmap{w.posting(postOrg(slug)), w.posting(postRoleOrg(slug))} {
			if c := bm.GetCardinality(); c > 1 || (c == 1 && !bm.Contains(n)) {
				return true
			}
		}
		return false
	}
	if cur := w.tx.Bucket(bucketOrgs).Get([]byte(slug)); cur != nil {
		var o incidentlib.Organization
		if err := json.Unmarshal(cur, &o); err != nil {
			return err
		}
		if o.Name == name {
			return nil
		}
		if usedByOthers(slug) {
			nameField := append(slices.Clone(field[:len(field)-1]), "org")
			return incidentlib.FieldErrorf(incidentlib.EINVALID, nameField,
				"org_slug %q belongs to organization %q, but incident %s names it %q", slug, o.Name, id, name)
		}
	}
	if w.orgNames == nil {
		w.orgNames = map[string][]string{}
		err := w.tx.Bucket(bucketOrgs).ForEach(func(k, v []byte) error {
			var o incidentlib.Organization
			if err := json.Unmarshal(v, &o); err != nil {
				return err
			}
			w.orgNames[foldName(o.Name)] = append(w.orgNames[foldName(o.Name)], string(k))
			return nil
		})
		if err != nil {
			return err
		}
	}
	key := foldName(name)
	for _, other := range w.orgNames[key] {
		if other == slug || !usedByOthers(other) {
			continue
		}
		// The names read earlier in this transaction may have changed since.
		var o incidentlib.Organization
		if v := w.tx.Bucket(bucketOrgs).Get([]byte(other)); v == nil || json.Unmarshal(v, &o) != nil || foldName(o.Name) != key {
			continue
		}
		return incidentlib.FieldErrorf(incidentlib.EINVALID, field,
			"organization %q is in the library as org_slug %q, but incident %s gives org_slug %q", name, other, id, slug)
	}
	return nil
}

// foldName is the form in which two organization names are the same:
// case and runs of white space do not count.
func foldName(name string) string { return strings.ToLower(strings.Join(strings.Fields(name), " ")) }

// checkLinks verifies that the links of the given incidents point to
// incidents in the store and that no recurrence chain forms a cycle.
func (w *writeTx) checkLinks(incs []*incidentlib.Incident, fieldPrefix func(i int) []string) error {
	var es incidentlib.Errors
	ib := w.tx.Bucket(bucketIncidents)
	exists := func(id string) bool {
		n, ok := incidentlib.ParseID(id)
		return ok && (ib.Get(u32key(n)) != nil || w.db.upstreamLinks)
	}
	for i, inc := range incs {
		for k, r := range inc.Related {
			if !exists(r) {
				es = append(es, incidentlib.FieldErrorf(incidentlib.EINVALID, append(fieldPrefix(i), "related", strconv.Itoa(k)),
					"incident %s: related[%d] %s is not in the library", inc.ID, k, r))
			}
		}
		if inc.RecurrenceOf == "" {
			continue
		}
		if !exists(inc.RecurrenceOf) {
			es = append(es, incidentlib.FieldErrorf(incidentlib.EINVALID, append(fieldPrefix(i), "recurrence_of"),
				"incident %s: recurrence_of %s is not in the library", inc.ID, inc.RecurrenceOf))
			continue
		}
		// Walk the chain: it must end without coming back.
		seen := map[string]bool{inc.ID: true}
		for id := inc.RecurrenceOf; id != ""; {
			if seen[id] {
				es = append(es, incidentlib.FieldErrorf(incidentlib.EINVALID, append(fieldPrefix(i), "recurrence_of"),
					"incident %s: recurrence_of %s forms a cycle of recurrences", inc.ID, inc.RecurrenceOf))
				break
			}
			seen[id] = true
			n, _ := incidentlib.ParseID(id)
			next, err := w.get(n)
			if err != nil {
				return err
			}
			if next == nil {
				break
			}
			id = next.RecurrenceOf
		}
	}
	if len(es) > 0 {
		return es
	}
	return nil
}
