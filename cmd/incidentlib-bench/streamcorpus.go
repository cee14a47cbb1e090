package main

import (
	"context"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"slices"

	"github.com/incidentlib/incidentlib"
	"github.com/incidentlib/incidentlib/gen"
	"github.com/incidentlib/incidentlib/seeds"
	"github.com/incidentlib/incidentlib/storage"
)

// The graphql benchmark's corpus, generated and imported streaming: the
// records go from the generator into the store in batches of one
// transaction each (storage.BatchedImport, as import --db writes), so that
// -count 1000000 runs in bounded memory. What the benchmark needs of the
// corpus is kept while it streams past; the records are not.

// streamBatch is how many records one transaction of the import writes.
const streamBatch = 5_000

// maxWarmRecords bounds the record cache of the benchmark's store and the
// records read into it before the measurements (a server of a larger
// library holds the records it was asked for, not the whole library).
const maxWarmRecords = 100_000

// corpusSummary is what the graphql benchmark keeps of its corpus.
type corpusSummary struct {
	count int
	// rich is the first incident with related incidents, a recurrence_of
	// link and recurrences of its own (among the first 1,000 with the
	// first two), so that the incident page exercises every relation.
	rich    string
	symptom string // commonSymptom's choice
}

// ids are the ids of the first n incidents of the corpus.
func (s *corpusSummary) ids(n int) []string {
	out := make([]string, min(n, s.count))
	for i := range out {
		out[i] = incidentlib.FormatID(uint32(i + 1))
	}
	return out
}

// streamGenerated opens a new store at path and fills it with the
// generated corpus of count incidents (seed), streaming.
func streamGenerated(ctx context.Context, path string, count int, seed int64) (*storage.DB, *corpusSummary, error) {
	tax, err := seeds.Taxonomy()
	if err != nil {
		return nil, nil, err
	}
	db, err := storage.Open(path, storage.Options{Taxonomy: tax, RecordCache: min(max(10_000, count), maxWarmRecords), NoSync: true})
	if err != nil {
		return nil, nil, err
	}
	sum := &corpusSummary{count: count}
	symptoms := map[string]int{}
	hasRecs := map[string]bool{}
	var rich []string // the first incidents with related ones and a recurrence_of link
	bi := db.Incidents().NewBatchedImport(count, storage.BatchedImportOptions{KeepUpdatedAt: true})
	batch := make([]*incidentlib.Incident, 0, streamBatch)
	done := 0
	err = gen.Stream(gen.Options{Count: count, Seed: seed, Taxonomy: tax}, func(inc *incidentlib.Incident) error {
		for _, s := range inc.Symptoms {
			symptoms[s]++
		}
		if inc.RecurrenceOf != "" {
			hasRecs[inc.RecurrenceOf] = true
		}
		if len(inc.Related) > 0 && inc.RecurrenceOf != "" && len(rich) < 1000 {
			rich = append(rich, inc.ID)
		}
		batch = append(batch, inc)
		done++
		if len(batch) == streamBatch || done == count {
			if _, err := bi.Write(ctx, batch, done == count); err != nil {
				return err
			}
			batch = batch[:0]
		}
		return nil
	})
	if err != nil {
		db.Close()
		return nil, nil, err
	}
	sum.rich = incidentlib.FormatID(1)
	if i := slices.IndexFunc(rich, func(id string) bool { return hasRecs[id] }); i >= 0 {
		sum.rich = rich[i]
	}
	sum.symptom = commonSymptom(symptoms)
	return db, sum, nil
}

// tempStreamed is streamGenerated in a new temporary directory, announced
// on stdout; done closes the store and removes the directory.
func tempStreamed(ctx context.Context, name string, count int, seed int64, stdout io.Writer) (*storage.DB, *corpusSummary, func(), error) {
	dir, err := os.MkdirTemp("", "incidentlib-bench-"+name+"-")
	if err != nil {
		return nil, nil, nil, err
	}
	fmt.Fprintf(stdout, "%s: generating and importing %d incidents (seed %d), streaming in transactions of %d\n", name, count, seed, streamBatch)
	db, sum, err := streamGenerated(ctx, filepath.Join(dir, "bench.db"), count, seed)
	if err != nil {
		os.RemoveAll(dir)
		return nil, nil, nil, err
	}
	return db, sum, func() { db.Close(); os.RemoveAll(dir) }, nil
}
