package storage

import (
	"context"
	"sort"

	bolt "go.etcd.io/bbolt"

	"github.com/incidentlib/incidentlib"
)

// Link is a related or recurrence_of link of an incident.
type Link struct {
	From string // the incident that links
	Kind string // "related" or "recurrence_of"
	To   string // the incident linked to
}

// UpstreamLinks lists, sorted, the links to incidents that are not in the
// store: with Options.UpstreamLinks they resolve from an upstream library;
// without it Check reports them as dangling.
func (st Incidents) UpstreamLinks(ctx context.Context) ([]Link, error) {
	var out []Link
	err := st.db.view(ctx, func(tx *bolt.Tx) error {
		ib := tx.Bucket(bucketIncidents)
		missing := func(id string) bool {
			n, ok := incidentlib.ParseID(id)
			return ok && ib.Get(u32key(n)) == nil
		}
		for _, lb := range []struct {
			bucket []byte
			kind   string
		}{{bucketRelatedRev, "related"}, {bucketRecurrences, "recurrence_of"}} {
			c := tx.Bucket(lb.bucket).Cursor()
			for k, _ := c.First(); k != nil; k, _ = c.Next() {
				if len(k) != 8 {
					continue
				}
				to := incidentlib.FormatID(getU32(k[:4]))
				if missing(to) {
					out = append(out, Link{From: incidentlib.FormatID(getU32(k[4:])), Kind: lb.kind, To: to})
				}
			}
		}
		return nil
	})
	sort.Slice(out, func(i, j int) bool {
		a, b := out[i], out[j]
		if a.From != b.From {
			return a.From < b.From
		}
		if a.Kind != b.Kind {
			return a.Kind < b.Kind
		}
		return a.To < b.To
	})
	return out, err
}

func getU32(b []byte) uint32 {
	return uint32(b[0])<<24 | uint32(b[1])<<16 | uint32(b[2])<<8 | uint32(b[3])
}
