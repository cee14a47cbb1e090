package storage

import (
	"context"
	"encoding/json"
	"fmt"
	"slices"
	"time"

	"github.com/RoaringBitmap/roaring/v2"
	bolt "go.etcd.io/bbolt"

	"github.com/incidentlib/incidentlib"
)

// Organizations through the API. The orgs bucket is kept from the
// incidents (an incident's org and organization_roles name them); an admin
// adds an organization no incident names yet (bucketOrgAdded keeps it
// without incidents), renames one (its name on it and on every incident
// that names it) and merges one into another (every incident re-pointed,
// the old slug kept as an alias: bucketOrgAliases). Incidents are
// rewritten through writeTx.put, so their indexes, reverse links and the
// change log (and so the search index and replicas) follow.

// readOrgAliases reads the organization aliases of tx (none in a store
// written before them).
func readOrgAliases(tx *bolt.Tx) (map[string]string, error) {
	out := map[string]string{}
	b := tx.Bucket(bucketOrgAliases)
	if b == nil {
		return out, nil
	}
	err := b.ForEach(func(k, v []byte) error {
		out[string(k)] = string(v)
		return nil
	})
	return out, err
}

// resolveOrg returns the slug of the organization slug names: slug itself,
// or, for the slug of an organization merged away, the organization that
// absorbed it.
func (db *DB) resolveOrg(slug string) string {
	if m := db.taxes.orgAliases.Load(); m != nil {
		if to, ok := (*m)[slug]; ok {
			return to
		}
	}
	return slug
}

// canonical rewrites an incoming record's term aliases to their terms
// (Taxonomy.Canonical). Organizations merged away are resolved in the
// write's transaction (resolveMerged).
func (db *DB) canonical(inc *incidentlib.Incident) { inc.CanonicalTerms(db.Taxonomies().Taxonomy()) }

// orgLookup reads organization slug with c or, when no organization has
// that slug, the one it was merged into; it returns the slug it found.
func (db *DB) orgLookup(c *bolt.Cursor, slug string) (string, []byte) {
	if v := seekGet(c, []byte(slug)); v != nil {
		return slug, v
	}
	if to := db.resolveOrg(slug); to != slug {
		if v := seekGet(c, []byte(to)); v != nil {
			return to, v
		}
	}
	return slug, nil
}

// orgPostings are the postings the organizations filter reads for slug:
// its own and, for a slug merged away, the surviving organization's (the
// union also finds an incident an import named it in since).
func (db *DB) orgPostings(slug string) []string {
	if to := db.resolveOrg(slug); to != slug {
		return []string{postOrg(slug), postOrg(to)}
	}
	return []string{postOrg(slug)}
}

// resolveMerged re-points a record being upserted that names an
// organization merged away (and not in the library again since) at the
// organization that absorbed it, slug and name, as the merge re-pointed
// the incidents of the time.
func (w *writeTx) resolveMerged(inc *incidentlib.Incident) error {
	orgs, aliases := w.tx.Bucket(bucketOrgs), w.tx.Bucket(bucketOrgAliases)
	survivor := func(slug string) (*incidentlib.Organization, error) {
		if orgs.Get([]byte(slug)) != nil {
			return nil, nil
		}
		to := aliases.Get([]byte(slug))
		if to == nil || orgs.Get(to) == nil { // not merged, or the survivor is gone since
			return nil, nil
		}
		return storedOrg(w.tx, string(to), "org_slug")
	}
	o, err := survivor(inc.OrgSlug)
	if err != nil {
		return err
	}
	if o != nil {
		inc.OrgSlug, inc.Org = o.Slug, o.Name
	}
	roles := make([]incidentlib.OrgRole, 0, len(inc.OrganizationRoles))
	changed := false
	for _, r := range inc.OrganizationRoles {
		o, err := survivor(r.OrgSlug)
		if err != nil {
			return err
		}
		if o != nil {
			r.OrgSlug, r.Org, changed = o.Slug, o.Name, true
		}
		if slices.ContainsFunc(roles, func(x incidentlib.OrgRole) bool { return x.OrgSlug == r.OrgSlug && x.Role == r.Role }) {
			continue // named twice once resolved
		}
		roles = append(roles, r)
	}
	if changed {
		inc.OrganizationRoles = roles
	}
	return nil
}

// orgAdded reports whether an admin added the organization slug: check
// keeps it although no incident names it.
func orgAdded(tx *bolt.Tx, slug []byte) bool {
	b := tx.Bucket(bucketOrgAdded)
	return b != nil && b.Get(slug) != nil
}

// storedOrg reads organization slug in tx; ENOTFOUND (field) when there is
// none, naming the organization it was merged into if it was.
func storedOrg(tx *bolt.Tx, slug string, field string) (*incidentlib.Organization, error) {
	v := tx.Bucket(bucketOrgs).Get([]byte(slug))
	if v == nil {
		if to := tx.Bucket(bucketOrgAliases).Get([]byte(slug)); to != nil {
			return nil, incidentlib.FieldErrorf(incidentlib.ENOTFOUND, []string{field}, "organization %q was merged into %q", slug, to)
		}
		return nil, incidentlib.FieldErrorf(incidentlib.ENOTFOUND, []string{field}, "organization %q is not in the library", slug)
	}
	o := new(incidentlib.Organization)
	if err := json.Unmarshal(v, o); err != nil {
		return nil, fmt.Errorf("storage: organization %q is corrupt: %w", slug, err)
	}
	return o, nil
}

// nameTaken returns the slug of another organization whose name is name
// (foldName), or "".
func nameTaken(tx *bolt.Tx, name, except string) (string, error) {
	key, taken := foldName(name), ""
	err := tx.Bucket(bucketOrgs).ForEach(func(k, v []byte) error {
		var o incidentlib.Organization
		if err := json.Unmarshal(v, &o); err != nil {
			return err
		}
		if string(k) != except && foldName(o.Name) == key && taken == "" {
			taken = string(k)
		}
		return nil
	})
	return taken, err
}

func putOrg(tx *bolt.Tx, o incidentlib.Organization) error {
	v, err := json.Marshal(o)
	if err != nil {
		return err
	}
	return tx.Bucket(bucketOrgs).Put([]byte(o.Slug), v)
}

// AddOrganization adds an organization; see incidentlib.TaxonomyAdmin.
func (st Taxonomies) AddOrganization(ctx context.Context, author string, in incidentlib.Organization) (*incidentlib.Organization, error) {
	o := in
	if err := o.Validate(); err != nil {
		return nil, err
	}
	err := st.db.adminUpdate(ctx, func(w *writeTx) error {
		if w.tx.Bucket(bucketOrgs).Get([]byte(o.Slug)) != nil {
			return incidentlib.FieldErrorf(incidentlib.ECONFLICT, []string{"slug"}, "organization %q is already in the library", o.Slug)
		}
		if to := w.tx.Bucket(bucketOrgAliases).Get([]byte(o.Slug)); to != nil {
			return incidentlib.FieldErrorf(incidentlib.ECONFLICT, []string{"slug"}, "%q is the slug of an organization merged into %q: it resolves there", o.Slug, to)
		}
		other, err := nameTaken(w.tx, o.Name, "")
		if err != nil {
			return err
		}
		if other != "" {
			return incidentlib.FieldErrorf(incidentlib.ECONFLICT, []string{"name"}, "organization %q is in the library as %q", o.Name, other)
		}
		before := w.seq
		if err := putOrg(w.tx, o); err != nil {
			return err
		}
		if err := w.tx.Bucket(bucketOrgAdded).Put([]byte(o.Slug), nil); err != nil {
			return err
		}
		return w.history(author, incidentlib.ActionAddOrganization, o.ID(), nil, &o, nil, before)
	})
	if err != nil {
		return nil, err
	}
	return &o, nil
}

// incidentsNaming returns, in number order, the incidents that name
// organization slug, as the affected one or in a role.
func (w *writeTx) incidentsNaming(slug string) []uint32 {
	bm := roaring.Or(w.posting(postOrg(slug)), w.posting(postRoleOrg(slug)))
	return bm.ToArray()
}

// repoint rewrites every incident that names organization from so that it
// names to (slug and name) instead, through put: indexes, reverse links
// and the change log follow. It returns the ids of the incidents it
// rewrote.
//
// Each rewrite is a write of the incident like any other: a version whose
// history entry records action (incidentlib.ActionMerge for a merge,
// incidentlib.ActionUpdate for a rename) and author (the admin's token).
func (w *writeTx) repoint(from string, to incidentlib.Organization, action incidentlib.ChangeAction, author string) ([]string, error) {
	w.action = action
	if author != "" {
		w.author = author
	}
	var ids []string
	for _, n := range w.incidentsNaming(from) {
		old, err := w.get(n)
		if err != nil {
			return nil, err
		}
		if old == nil {
			continue
		}
		c := *old
		if c.OrgSlug == from {
			c.OrgSlug, c.Org = to.Slug, to.Name
		}
		if len(c.OrganizationRoles) > 0 {
			roles := make([]incidentlib.OrgRole, 0, len(c.OrganizationRoles))
			for _, r := range c.OrganizationRoles {
				if r.OrgSlug == from || r.OrgSlug == to.Slug {
					r.OrgSlug, r.Org = to.Slug, to.Name
				}
				if slices.ContainsFunc(roles, func(x incidentlib.OrgRole) bool { return x.OrgSlug == r.OrgSlug && x.Role == r.Role }) {
					continue // named twice once merged
				}
				roles = append(roles, r)
			}
			c.OrganizationRoles = roles
		}
		if c.OrgSlug == to.Slug {
			c.Org = to.Name
		}
		c.UpdatedAt = laterThan(w.now, old.UpdatedAt)
		if err := w.put(&c); err != nil {
			return nil, err
		}
		ids = append(ids, c.ID)
	}
	return ids, nil
}

// laterThan returns now, or 1µs after prev when now is not after it (the
// clock of the node that stamped a cluster's write may be behind the one
// that wrote the incident last): updated_at grows with every version.
func laterThan(now, prev string) string {
	n, err1 := incidentlib.ParseTimestamp(now)
	p, err2 := incidentlib.ParseTimestamp(prev)
	if err1 != nil || err2 != nil || n.After(p) {
		return now
	}
	return p.Add(time.Microsecond).UTC().Format(time.RFC3339Nano)
}

// RenameOrganization renames an organization on it and on every incident
// that names it; see incidentlib.TaxonomyAdmin.
func (st Taxonomies) RenameOrganization(ctx context.Context, author, slug, name string) (*incidentlib.Organization, *incidentlib.MergeResult, error) {
	if err := incidentlib.ValidateOrganizationName(name); err != nil {
		return nil, nil, err
	}
	var out *incidentlib.Organization
	res := &incidentlib.MergeResult{Incidents: []string{}}
	err := st.db.adminUpdate(ctx, func(w *writeTx) error {
		out, res.Incidents = nil, []string{}
		old, err := storedOrg(w.tx, slug, "slug")
		if err != nil {
			return err
		}
		o := incidentlib.Organization{Slug: slug, Name: name}
		out, res.Into = &o, &o
		if old.Name == name {
			return nil
		}
		other, err := nameTaken(w.tx, name, slug)
		if err != nil {
			return err
		}
		if other != "" {
			return incidentlib.FieldErrorf(incidentlib.ECONFLICT, []string{"name"}, "organization %q is in the library as %q: merge the two instead", name, other)
		}
		before := w.seq
		// The new name first: each rewritten incident then matches it.
		if err := putOrg(w.tx, o); err != nil {
			return err
		}
		w.orgNames = nil
		ids, err := w.repoint(slug, o, incidentlib.ActionUpdate, author)
		if err != nil {
			return err
		}
		res.Incidents = ids
		return w.history(author, incidentlib.ActionRenameOrganization, o.ID(), old, &o, ids, before)
	})
	if err != nil {
		return nil, nil, err
	}
	return out, res, nil
}

// MergeOrganizations merges organization from into organization into; see
// incidentlib.TaxonomyAdmin.
func (st Taxonomies) MergeOrganizations(ctx context.Context, author, from, into string) (*incidentlib.MergeResult, error) {
	if err := incidentlib.ValidateMerge(from, into); err != nil {
		return nil, err
	}
	res := &incidentlib.MergeResult{}
	err := st.db.adminUpdate(ctx, func(w *writeTx) error {
		res.Into, res.Incidents = nil, []string{}
		src, err := storedOrg(w.tx, from, "from")
		if err != nil {
			return err
		}
		dst, err := storedOrg(w.tx, into, "into")
		if err != nil {
			return err
		}
		before := w.seq
		ids, err := w.repoint(from, *dst, incidentlib.ActionMerge, author)
		if err != nil {
			return err
		}
		if err := w.tx.Bucket(bucketOrgs).Delete([]byte(from)); err != nil {
			return err
		}
		if err := w.tx.Bucket(bucketOrgAdded).Delete([]byte(from)); err != nil {
			return err
		}
		if err := aliasOrg(w.tx, from, into); err != nil {
			return err
		}
		res.Into, res.Incidents = dst, ids
		return w.history(author, incidentlib.ActionMergeOrganizations, src.ID(), src, dst, ids, before)
	})
	if err != nil {
		return nil, err
	}
	return res, nil
}

// aliasOrg makes the slug from, and the slugs merged into from before,
// resolve to the organization into.
func aliasOrg(tx *bolt.Tx, from, into string) error {
	ab := tx.Bucket(bucketOrgAliases)
	var earlier [][]byte
	if err := ab.ForEach(func(k, v []byte) error {
		if string(v) == from {
			earlier = append(earlier, slices.Clone(k))
		}
		return nil
	}); err != nil {
		return err
	}
	for _, k := range append(earlier, []byte(from)) {
		if err := ab.Put(k, []byte(into)); err != nil {
			return err
		}
	}
	return nil
}
