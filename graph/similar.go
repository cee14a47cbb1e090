package graph

import (
	"context"
	"sort"

	"github.com/incidentlib/incidentlib"
)

// similarRanking is Incident.similar's ranking: the store's (shared
// taxonomy terms and organization) and, with search, the index's (shared
// glossary words in either language, so that a Korean-only record can be
// similar to an English one), their scores added per incident, best
// first. Each source ranks twice n, so that an incident near the top of
// the sum is rarely missing from either list.
func similarRanking(ctx context.Context, store incidentlib.IncidentService, search incidentlib.SearchService, id string, n int) ([]incidentlib.SimilarIncident, error) {
	k := n
	if search != nil {
		k = min(2*n, incidentlib.MaxPageSize)
	}
	sims, err := store.Similar(ctx, id, k)
	if err != nil || search == nil {
		return sims, err
	}
	words, err := search.SimilarByWords(ctx, id, k)
	if err != nil {
		if incidentlib.ErrorCode(err) == incidentlib.ENOTFOUND {
			words = nil // not indexed yet: the store's ranking alone
		} else {
			return nil, err
		}
	}
	at := make(map[string]int, len(sims))
	for i, s := range sims {
		at[s.ID] = i
	}
	for _, w := range words {
		if i, ok := at[w.ID]; ok {
			sims[i].Score += w.Score
			sims[i].SharedWords = w.SharedWords
			continue
		}
		at[w.ID] = len(sims)
		sims = append(sims, w)
	}
	sort.SliceStable(sims, func(i, j int) bool { return sims[i].Score > sims[j].Score })
	if len(sims) > n {
		sims = sims[:n]
	}
	return sims, nil
}
