package storage

import (
	"context"

	bolt "go.etcd.io/bbolt"

	"github.com/incidentlib/incidentlib"
)

// The reverse of related: the incidents whose related names a given one,
// read from the relatedrev bucket (target + source keys), which every
// write keeps in its transaction (index and unindex in writeindex.go), merges
// and deletes included.

// RelatedByIDs returns, for each id, the ids of the incidents whose
// related names it, in id order, counting only the incidents lists show by
// default. Unknown or malformed ids get none. It reads in one transaction.
func (st Incidents) RelatedByIDs(ctx context.Context, ids []string) ([][]string, error) {
	return st.db.listedSources(ctx, ids, bucketRelatedRev, true)
}

// listedSources returns, for each id, the ids of the incidents that link
// to it in bucket (target + source keys: recurrences, relatedrev), in id
// order, counting only the incidents lists show by default and, with
// skipSelf, not the incident itself. Unknown or malformed ids get none.
// It reads in one transaction.
func (db *DB) listedSources(ctx context.Context, ids []string, bucket []byte, skipSelf bool) ([][]string, error) {
	out := make([][]string, len(ids))
	err := db.view(ctx, func(tx *bolt.Tx) error {
		links := newLinkReader(tx, bucket)
		unlisted := unlistedSet(tx) // the visibility rule (listed.go)
		for i, id := range ids {
			n, ok := incidentlib.ParseID(id)
			if !ok {
				continue
			}
			for _, s := range links.sources(n) {
				if (!skipSelf || s != n) && !unlisted.Contains(s) {
					out[i] = append(out[i], incidentlib.FormatID(s))
				}
			}
		}
		return nil
	})
	return out, err
}

func (s *snapshot) RelatedByIDs(_ context.Context, ids []string) ([][]string, error) {
	return s.db.Incidents().RelatedByIDs(s, ids)
}
