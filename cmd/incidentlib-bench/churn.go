package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"math/rand/v2"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"time"

	"github.com/incidentlib/incidentlib"
	"github.com/incidentlib/incidentlib/gen"
	"github.com/incidentlib/incidentlib/seeds"
	"github.com/incidentlib/incidentlib/storage"
)

type churnBench struct {
	writes  int
	deletes float64
	window  int
	noSync  bool
	rows    int
}

func (b *churnBench) declare(fs *flag.FlagSet) {
	fs.IntVar(&b.writes, "writes", 200_000, "writes of the churn: upserts and deletes (at least 100)")
	fs.Float64Var(&b.deletes, "deletes", 0.2, "share of the writes that are deletes, 0 to 0.5; deleted incidents come back with later upserts")
	fs.IntVar(&b.window, "window", 5_000, "upserts measured at the start and at the end (at most a third of the upserts are used)")
	fs.BoolVar(&b.noSync, "nosync", false, "skip fsync at commit (the output says so); measures the store without the disk's flush latency")
	fs.IntVar(&b.rows, "rows", 10, "progress rows printed during the churn")
}

func (b *churnBench) check() error {
	switch {
	case b.writes < 100:
		return errors.New("-writes must be at least 100")
	case b.deletes < 0 || b.deletes > 0.5:
		return errors.New("-deletes must be between 0 and 0.5")
	case b.window < 10 || b.rows < 1:
		return errors.New("-window must be at least 10 and -rows at least 1")
	}
	return nil
}

func (b *churnBench) runIn(ctx context.Context, c *corpus, dir string, stdout io.Writer) error {
	return b.churn(ctx, c, filepath.Join(dir, "churn.db"), stdout)
}

// churnState is the churn's picture of the store: which incidents are
// live, and the generated record each one is written from.
type churnState struct {
	base  map[string]*incidentlib.Incident
	live  []string
	pos   map[string]int // index in live
	dead  []string
	rng   *rand.Rand
	tax   *incidentlib.Taxonomy
	edits int
}

func (s *churnState) kill(id string) {
	i := s.pos[id]
	last := s.live[len(s.live)-1]
	s.live[i], s.pos[last] = last, i
	s.live = s.live[:len(s.live)-1]
	delete(s.pos, id)
	s.dead = append(s.dead, id)
}

func (s *churnState) revive(i int) string {
	id := s.dead[i]
	s.dead[i] = s.dead[len(s.dead)-1]
	s.dead = s.dead[:len(s.dead)-1]
	s.pos[id] = len(s.live)
	s.live = append(s.live, id)
	return id
}

// record is the generated record of id, edited: a new title revision,
// terms drawn anew, and only the links to incidents that are live (the
// generated links form no recurrence cycle, and removing links cannot
// make one).
func (s *churnState) record(id string) *incidentlib.Incident {
	s.edits++
	c := *s.base[id]
	c.Title.En = fmt.Sprintf("%s (revision %d)", c.Title.En, s.edits)
	c.UpdatedAt, c.Review.ReviewedAt, c.Review.ReviewedBy = "", "", ""
	pick := func(kind incidentlib.TermKind) string {
		terms := s.tax.Kind(kind)
		if len(terms) == 0 {
			return ""
		}
		return terms[s.rng.IntN(len(terms))].Slug
	}
	if d := pick(incidentlib.KindDomain); d != "" {
		c.Domain = []string{d}
	}
	c.Severity = pick(incidentlib.KindSeverity)
	c.Related = nil
	for _, r := range s.base[id].Related {
		if _, ok := s.pos[r]; ok {
			c.Related = append(c.Related, r)
		}
	}
	if _, ok := s.pos[c.RecurrenceOf]; !ok {
		c.RecurrenceOf = ""
	}
	return &c
}

// load imports incs in transactions of a few thousand records: first
// without their links (which may point to any other record), then whole.
// One transaction for everything would spend its time moving keys inside
// bbolt's in-memory nodes, which split only at commit.
func load(ctx context.Context, db *storage.DB, incs []*incidentlib.Incident) error {
	const chunk = 2000
	bare := make([]*incidentlib.Incident, len(incs))
	for i, inc := range incs {
		c := *inc
		c.Related, c.RecurrenceOf = nil, ""
		bare[i] = &c
	}
	for _, set := range [][]*incidentlib.Incident{bare, incs} {
		for i := 0; i < len(set); i += chunk {
			if _, err := db.Incidents().ImportIncidents(ctx, set[i:min(i+chunk, len(set))], incidentlib.ImportOptions{KeepUpdatedAt: true}); err != nil {
				return err
			}
		}
	}
	return nil
}

func percentile(d []time.Duration, p float64) time.Duration {
	if len(d) == 0 {
		return 0
	}
	s := slices.Clone(d)
	slices.Sort(s)
	return s[min(len(s)-1, int(p*float64(len(s))))]
}

func mib(n int64) string { return fmt.Sprintf("%.1f MiB", float64(n)/(1<<20)) }

func (b *churnBench) churn(ctx context.Context, c *corpus, path string, out io.Writer) error {
	tax, err := seeds.Taxonomy()
	if err != nil {
		return err
	}
	sync := "fsync on every commit"
	if b.noSync {
		sync = "NoSync: fsync OFF (the figures leave out the disk's flush latency)"
	}
	fmt.Fprintf(out, "churn: %d incidents, %d writes (%.0f%% deletes), seed %d, one writer, %s\nstore: %s\n",
		c.incidents, b.writes, b.deletes*100, c.seed, sync, path)

	incs, err := gen.Generate(gen.Options{Count: c.incidents, Seed: c.seed, FirstID: 1, Taxonomy: tax})
	if err != nil {
		return err
	}
	db, err := storage.Open(path, storage.Options{Taxonomy: tax, RecordCache: 10_000, NoSync: b.noSync})
	if err != nil {
		return err
	}
	defer func() {
		if db != nil {
			db.Close()
		}
	}()
	start := time.Now()
	if err := load(ctx, db, incs); err != nil {
		return fmt.Errorf("load: %w", err)
	}
	live, err := db.Maintenance().Live(ctx)
	if err != nil {
		return err
	}
	fmt.Fprintf(out, "load: %d incidents in %s; file %s, live data %s (records %s)\n\n",
		c.incidents, time.Since(start).Round(time.Millisecond), mib(db.Maintenance().StoreStats().FileBytes), mib(live.KeyValueBytes), mib(live.RecordBytes))

	st := &churnState{base: map[string]*incidentlib.Incident{}, pos: map[string]int{},
		rng: rand.New(rand.NewPCG(uint64(c.seed), 2)), tax: tax}
	for _, inc := range incs {
		st.base[inc.ID] = inc
		st.pos[inc.ID] = len(st.live)
		st.live = append(st.live, inc.ID)
	}

	window := min(b.window, int(float64(b.writes)*(1-b.deletes))/3)
	var first, last, rowUps, rowDels []time.Duration
	var peakFreelist, peakFree int
	const row = "%10s %11s %11s %11s %11s %10s %8s %14s\n"
	fmt.Fprintf(out, row, "writes", "upsert p50", "p99", "delete p50", "file", "free pages", "pending", "freelist bytes")
	every := max(b.writes/b.rows, 1)
	churnStart := time.Now()
	for i := 1; i <= b.writes; i++ {
		if i%1024 == 0 && ctx.Err() != nil {
			return ctx.Err()
		}
		if st.rng.Float64() < b.deletes && len(st.live) > c.incidents/2 {
			id := st.live[st.rng.IntN(len(st.live))]
			t0 := time.Now()
			if _, err := db.Incidents().DeleteIncident(ctx, id, incidentlib.WriteOptions{}); err != nil {
				return fmt.Errorf("write %d: delete %s: %w", i, id, err)
			}
			rowDels = append(rowDels, time.Since(t0))
			st.kill(id)
		} else {
			var id string
			if len(st.dead) > 0 && st.rng.IntN(2) == 0 {
				id = st.revive(st.rng.IntN(len(st.dead)))
				// A deleted incident is a tombstone that keeps its history:
				// it comes back by a restore (not timed), then the upsert.
				_, tomb, err := db.Versions().DeletedIncident(ctx, id)
				if err != nil || tomb == nil {
					return fmt.Errorf("write %d: %s is not deleted: %v", i, id, err)
				}
				if _, err := db.Incidents().RestoreIncident(ctx, id, tomb.Version-1, "", incidentlib.WriteOptions{}); incidentlib.ErrorCode(err) == incidentlib.EINVALID {
					// Its last record links to an incident deleted since:
					// it stays deleted, and a live one is edited instead.
					st.kill(id)
					id = st.live[st.rng.IntN(len(st.live))]
				} else if err != nil {
					return fmt.Errorf("write %d: restore %s: %w", i, id, err)
				}
			} else {
				id = st.live[st.rng.IntN(len(st.live))]
			}
			rec := st.record(id)
			t0 := time.Now()
			if _, err := db.Incidents().UpsertIncident(ctx, rec, incidentlib.WriteOptions{}); err != nil {
				return fmt.Errorf("write %d: upsert %s: %w", i, id, err)
			}
			d := time.Since(t0)
			rowUps = append(rowUps, d)
			if len(first) < window {
				first = append(first, d)
			}
			last = append(last, d)
			if len(last) > 2*window {
				last = slices.Delete(last, 0, len(last)-window)
			}
		}
		if i%every == 0 || i == b.writes {
			s := db.Maintenance().StoreStats()
			peakFreelist, peakFree = max(peakFreelist, s.FreelistBytes), max(peakFree, s.FreePages)
			fmt.Fprintf(out, row, strconv.Itoa(i),
				percentile(rowUps, 0.5).Round(time.Microsecond), percentile(rowUps, 0.99).Round(time.Microsecond),
				percentile(rowDels, 0.5).Round(time.Microsecond), mib(s.FileBytes),
				strconv.Itoa(s.FreePages), strconv.Itoa(s.PendingPages), strconv.Itoa(s.FreelistBytes))
			rowUps, rowDels = rowUps[:0], rowDels[:0]
		}
	}
	elapsed := time.Since(churnStart)
	if len(last) > window {
		last = last[len(last)-window:]
	}
	s := db.Maintenance().StoreStats()
	live, err = db.Maintenance().Live(ctx)
	if err != nil {
		return err
	}
	p99a, p99b := percentile(first, 0.99), percentile(last, 0.99)
	fmt.Fprintf(out, "\nchurn: %d writes in %s (%.0f writes/s)\n", b.writes, elapsed.Round(time.Millisecond), float64(b.writes)/elapsed.Seconds())
	fmt.Fprintf(out, "upserts, first %d: p50 %s  p99 %s\n", len(first), percentile(first, 0.5).Round(time.Microsecond), p99a.Round(time.Microsecond))
	fmt.Fprintf(out, "upserts, last %d:  p50 %s  p99 %s  (p99 end/start %.2fx; target at most 1.5x)\n",
		len(last), percentile(last, 0.5).Round(time.Microsecond), p99b.Round(time.Microsecond), float64(p99b)/float64(p99a))
	fmt.Fprintf(out, "file %s vs live data %s (%.2fx; records alone %s); %d incidents live\n",
		mib(s.FileBytes), mib(live.KeyValueBytes), float64(s.FileBytes)/float64(live.KeyValueBytes), mib(live.RecordBytes), live.Incidents)
	fmt.Fprintf(out, "freelist: %d bytes now, %d at most (free pages: %d now, %d at most); the hashmap freelist is not written at commit (NoFreelistSync)\n",
		s.FreelistBytes, peakFreelist, s.FreePages, peakFree)

	if err := db.Close(); err != nil {
		return err
	}
	db = nil
	before := s.FileBytes
	start = time.Now()
	if err := storage.Compact(path, path, storage.Options{Taxonomy: tax}); err != nil {
		return fmt.Errorf("compact: %w", err)
	}
	took := time.Since(start)
	fi, err := os.Stat(path)
	if err != nil {
		return err
	}
	re, err := storage.Open(path, storage.Options{Taxonomy: tax, ReadOnly: true})
	if err != nil {
		return err
	}
	defer re.Close()
	problems, err := re.Maintenance().Check(ctx)
	if err != nil {
		return err
	}
	verdict := "check: ok"
	if len(problems) > 0 {
		verdict = fmt.Sprintf("check: %d PROBLEMS, the first: %s", len(problems), problems[0])
	}
	fmt.Fprintf(out, "compact: %s -> %s in %s (%.2fx live data; target at most 2x); %s\n",
		mib(before), mib(fi.Size()), took.Round(time.Millisecond), float64(fi.Size())/float64(live.KeyValueBytes), verdict)
	if len(problems) > 0 {
		return errors.New("the store fails check after the churn")
	}
	return b.compactHistory(ctx, path, tax, re, out)
}

// compactHistory drops every version but each incident's latest
// (incidentlib history compact --before a time after the churn), then
// rewrites the file, and reports the sizes: what the history cost.
func (b *churnBench) compactHistory(ctx context.Context, path string, tax *incidentlib.Taxonomy, ro *storage.DB, out io.Writer) error {
	if err := ro.Close(); err != nil {
		return err
	}
	db, err := storage.Open(path, storage.Options{Taxonomy: tax, NoSync: b.noSync})
	if err != nil {
		return err
	}
	start := time.Now()
	n, err := db.Maintenance().CompactHistory(ctx, time.Now().Add(time.Hour))
	if err != nil {
		db.Close()
		return err
	}
	live, err := db.Maintenance().Live(ctx)
	if err != nil {
		db.Close()
		return err
	}
	if err := db.Close(); err != nil {
		return err
	}
	if err := storage.Compact(path, path, storage.Options{Taxonomy: tax}); err != nil {
		return err
	}
	fi, err := os.Stat(path)
	if err != nil {
		return err
	}
	fmt.Fprintf(out, "history compact: removed %d versions in %s; live data %s; after compact the file is %s\n",
		n, time.Since(start).Round(time.Millisecond), mib(live.KeyValueBytes), mib(fi.Size()))
	return nil
}
