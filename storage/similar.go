package storage

import (
	"context"
	"math"
	"sort"

	bolt "go.etcd.io/bbolt"

	"github.com/RoaringBitmap/roaring/v2"
	"github.com/incidentlib/incidentlib"
)

// Similar ranks incidents by the terms they share with incident id, each
// shared term weighted by its rarity (inverse document frequency,
// ln(1 + N/df)), plus the organization's weight when it is the same one.
// Severity is not topical and is left out. It reads the postings of the
// incident's own terms only, never the corpus. Unlisted (withdrawn)
// incidents are neither ranked nor counted (listed.go); a withdrawn
// incident itself, readable by id, is ranked against the listed ones.
func (st Incidents) Similar(ctx context.Context, id string, n int) ([]incidentlib.SimilarIncident, error) {
	if n < 0 || n > incidentlib.MaxPageSize {
		return nil, incidentlib.FieldErrorf(incidentlib.EINVALID, []string{"first"}, "first must be between 0 and %d, got %d", incidentlib.MaxPageSize, n)
	}
	self, ok := incidentlib.ParseID(id)
	if !ok {
		return nil, incidentlib.Errorf(incidentlib.ENOTFOUND, "incident %q not found", id)
	}
	var out []incidentlib.SimilarIncident
	err := st.db.view(ctx, func(tx *bolt.Tx) error {
		inc, err := st.db.getIncident(tx, self)
		if err != nil {
			return err
		}
		if inc == nil {
			return incidentlib.Errorf(incidentlib.ENOTFOUND, "incident %s not found", id)
		}
		// Only the incidents lists show are ranked, and counted in the
		// weights (the visibility rule, listed.go).
		unlisted := unlistedSet(tx)
		total := float64(readPosting(tx, postAll).GetCardinality() - unlisted.GetCardinality())
		type cand struct {
			score  float64
			shared []incidentlib.TermKey
			org    bool
		}
		cands := map[uint32]*cand{}
		// add scores the other incidents of posting p, shared term t (nil:
		// the organization), by its rarity; a posting of one incident
		// shares nothing.
		add := func(p *roaring.Bitmap, t *incidentlib.TermKey) {
			// The listed incidents of p, and self, whose own term counts
			// in its frequency, listed or not; counted without a copy.
			df := float64(p.GetCardinality() - p.AndCardinality(unlisted))
			if unlisted.Contains(self) && p.Contains(self) {
				df++
			}
			if df <= 1 {
				return
			}
			w := math.Log(1 + total/df)
			it := p.Iterator()
			for it.HasNext() {
				doc := it.Next()
				if doc == self || unlisted.Contains(doc) {
					continue
				}
				c := cands[doc]
				if c == nil {
					c = &cand{}
					cands[doc] = c
				}
				c.score += w
				if t == nil {
					c.org = true
				} else {
					c.shared = append(c.shared, *t)
				}
			}
		}
		for _, t := range inc.Terms() {
			if t.Kind != incidentlib.KindSeverity {
				add(readPosting(tx, postTerm(t.Kind, t.Slug)), &t)
			}
		}
		add(readPosting(tx, postOrg(inc.OrgSlug)), nil)
		docs := make([]uint32, 0, len(cands))
		for d := range cands {
			docs = append(docs, d)
		}
		sort.Slice(docs, func(i, j int) bool {
			a, b := cands[docs[i]], cands[docs[j]]
			if a.score != b.score {
				return a.score > b.score
			}
			return docs[i] < docs[j]
		})
		if len(docs) > n {
			docs = docs[:n]
		}
		for _, d := range docs {
			c := cands[d]
			out = append(out, incidentlib.SimilarIncident{
				ID: incidentlib.FormatID(d), Score: math.Round(c.score*1000) / 1000,
				SharedTerms: c.shared, SameOrganization: c.org,
			})
		}
		return nil
	})
	return out, err
}
