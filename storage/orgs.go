package storage

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"sync"

	bolt "go.etcd.io/bbolt"

	"github.com/incidentlib/incidentlib"
)

// FindOrganizationsBySlugs returns organizations in the order of slugs;
// the slug of an organization merged away gives the one that absorbed it.
func (st Taxonomies) FindOrganizationsBySlugs(ctx context.Context, slugs []string) ([]*incidentlib.Organization, error) {
	return findEach(ctx, st.db, slugs, func(tx *bolt.Tx) func(string) (*incidentlib.Organization, error) {
		c := tx.Bucket(bucketOrgs).Cursor()
		return func(s string) (*incidentlib.Organization, error) {
			// The slug of an organization merged away gives the one that
			// absorbed it (orgadmin.go).
			if s, v := st.db.orgLookup(c, s); v != nil {
				return st.db.orgs.decode(s, v)
			}
			return nil, nil
		}
	})
}

// FindOrganizations returns one page of organizations ordered by slug.
// Cursors are the slug, base64url encoded.
func (st Taxonomies) FindOrganizations(ctx context.Context, p incidentlib.PageArgs) (*incidentlib.OrganizationPage, error) {
	n, backward, err := pageSize(p)
	if err != nil {
		return nil, err
	}
	dec := func(s *string) ([]byte, error) {
		if s == nil {
			return nil, nil
		}
		b, err := decodeOrgCursor(*s)
		return b, err
	}
	after, err := dec(p.After)
	if err != nil {
		return nil, err
	}
	before, err := dec(p.Before)
	if err != nil {
		return nil, err
	}
	page := &incidentlib.OrganizationPage{}
	err = st.db.view(ctx, func(tx *bolt.Tx) error {
		b := tx.Bucket(bucketOrgs)
		page.TotalCount = b.Stats().KeyN
		seq := &bucketSeq{c: b.Cursor()}
		keys, hasMore, hasBeyond := collect(seq, after, before, n, backward)
		if backward {
			page.HasPreviousPage, page.HasNextPage = hasMore, hasBeyond
		} else {
			page.HasNextPage, page.HasPreviousPage = hasMore, hasBeyond
		}
		for _, k := range keys {
			o, err := st.db.orgs.decode(string(k), b.Get(k))
			if err != nil {
				return err
			}
			page.Organizations = append(page.Organizations, o)
			page.Cursors = append(page.Cursors, encodeOrgCursor(k))
		}
		return nil
	})
	if err != nil {
		return nil, err
	}
	return page, nil
}

func encodeOrgCursor(slug []byte) string { return encodeCursor('o', slug) }

func decodeOrgCursor(s string) ([]byte, error) {
	b, err := decodeCursorRaw(s)
	if err != nil || len(b) < 3 || b[1] != 'o' {
		return nil, incidentlib.Errorf(incidentlib.EBADCURSOR, "cursor %q is malformed", s)
	}
	return b[2:], nil
}

// orgCache keeps organizations decoded, each with the stored bytes it was
// decoded from: an entry is used only while the store holds the same bytes,
// so a write needs no invalidation. Callers share the returned values and
// must not change them. Organizations are few (one per slug); past
// maxCachedOrgs the cache starts again.
type orgCache struct {
	mu sync.RWMutex
	m  map[string]cachedOrg
}

type cachedOrg struct {
	raw []byte
	org *incidentlib.Organization
}

const maxCachedOrgs = 50_000

func (c *orgCache) decode(slug string, v []byte) (*incidentlib.Organization, error) {
	c.mu.RLock()
	e, ok := c.m[slug]
	c.mu.RUnlock()
	if ok && bytes.Equal(e.raw, v) {
		return e.org, nil
	}
	o := new(incidentlib.Organization)
	if err := json.Unmarshal(v, o); err != nil {
		return nil, fmt.Errorf("storage: organization %q is corrupt: %w", slug, err)
	}
	c.mu.Lock()
	if c.m == nil || len(c.m) >= maxCachedOrgs {
		c.m = map[string]cachedOrg{}
	}
	c.m[slug] = cachedOrg{raw: bytes.Clone(v), org: o}
	c.mu.Unlock()
	return o, nil
}
