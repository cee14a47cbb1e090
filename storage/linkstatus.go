package storage

import (
	"context"
	"encoding/binary"
	"slices"

	bolt "go.etcd.io/bbolt"

	"github.com/incidentlib/incidentlib"
)

// SourceURLs returns every source URL of the library with the ids of the
// incidents that cite it (in id order), read in one transaction.
func (st Incidents) SourceURLs(ctx context.Context) (map[string][]string, error) {
	out := map[string][]string{}
	err := st.db.view(ctx, func(tx *bolt.Tx) error {
		c := tx.Bucket(bucketIncidents).Cursor()
		i := 0
		for k, _ := c.First(); k != nil; k, _ = c.Next() {
			if i++; i%1024 == 0 {
				if err := ctx.Err(); err != nil {
					return ctxError(err)
				}
			}
			inc, err := st.db.getIncident(tx, binary.BigEndian.Uint32(k))
			if err != nil {
				return err
			}
			for _, s := range inc.Sources {
				if ids := out[s.URL]; len(ids) == 0 || ids[len(ids)-1] != inc.ID {
					out[s.URL] = append(ids, inc.ID)
				}
			}
		}
		return nil
	})
	return out, err
}

// RecordSourceChecks records link check results, by URL, on the sources
// of the incidents ids that still cite a checked URL, in one write
// transaction that reads each record afresh (an edit made while the links
// were being checked is kept). updated_at is not stamped: a link check is
// not an edit of the account; the change is logged like any other, so
// replicas receive it. Unknown ids are skipped. Returns how many incidents
// were written.
func (st Incidents) RecordSourceChecks(ctx context.Context, ids []string, checks map[string]incidentlib.SourceCheck) (int, error) {
	var written int
	err := st.db.update(ctx, func(w *writeTx) error {
		written = 0
		for _, id := range ids {
			n, ok := incidentlib.ParseID(id)
			if !ok {
				continue
			}
			old, err := w.get(n)
			if err != nil {
				return err
			}
			if old == nil {
				continue
			}
			var sources []incidentlib.Source
			for i, s := range old.Sources {
				c, ok := checks[s.URL]
				if !ok {
					continue
				}
				if sources == nil {
					sources = slices.Clone(old.Sources)
				}
				sources[i] = s.WithCheck(c)
			}
			if sources == nil {
				continue
			}
			rec := *old
			rec.Sources = sources
			if sameRecord(old, &rec) {
				continue
			}
			if err := w.put(&rec); err != nil {
				return err
			}
			written++
		}
		return nil
	})
	return written, err
}
