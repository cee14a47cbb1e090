// Package search is the library's full-text index: English and Korean
// text with BM25 ranking, highlights, and the store's filters.
//
// The index is derived from the store and never the other way round. It
// is an inverted index of its own (see docs/search.md for why it replaced
// bleve): for every term of every indexed field, the incidents that hold
// it, with the term's positions for phrases, held in memory and saved as
// one file in a directory next to the store's file. The file records the
// store sequence (incidentlib.ChangeLog.Seq) of the last change the index
// applied, and the index catches up from the store's change log
// (RawChangesSince): at open, in the background after commits
// (Options.Follow), and before every search, so that a search that starts
// after a write was acknowledged sees it. Deleted incidents are removed by their
// tombstones. The file is replaced whole (written aside, synced, renamed)
// after a build, every saveEvery while following, and at Close; should
// the process die in between, the index reopens at the sequence of the
// last file and catches up.
//
// Filters are the store's own (incidentlib.IncidentSets.MatchSet): a
// search keeps the hits whose incident is in the store's set for its
// filter (the empty filter too), so a filter means exactly what it means
// for incidents, withdrawn incidents left out unless it names them.
package search

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"os"
	"path/filepath"
	"runtime"
	"sync"
	"sync/atomic"
	"time"

	"golang.org/x/sync/semaphore"

	"github.com/incidentlib/incidentlib"
	"github.com/incidentlib/incidentlib/glossary"
)

// Store is what the index reads of the store: the change log it follows,
// the incident sets that filter, facet and count its matches, and the
// records it cuts highlights from. storage.Incidents implements it.
type Store interface {
	incidentlib.ChangeLog
	incidentlib.IncidentSets
	incidentlib.RecordReader
	// Path names the store in messages.
	Path() string
}

// formatVersion names the analyzer and the file layout. An index built
// with another one is rebuilt.
const formatVersion = "incidentlib-search-4"

// indexFile is the index's file inside its directory.
const indexFile = "index.bin"

// Field is a searchable field of an incident.
type Field string

// Searchable fields.
const (
	FieldTitle        Field = "title"
	FieldSummary      Field = "summary"
	FieldLessons      Field = "lessons"
	FieldTrigger      Field = "trigger"
	FieldDetection    Field = "detection"
	FieldSymptomsText Field = "symptomsText"
	FieldOrg          Field = "org"
)

// ifield is a field of the index. The body of each language holds the
// summary, trigger, detection and symptom texts as one field; title and
// lessons have their own, for the title's weight and the lessons: prefix.
type ifield uint8

const (
	ifTitleEn ifield = iota
	ifTitleKo
	ifBodyEn
	ifBodyKo
	ifLessonsEn
	ifLessonsKo
	ifOrg
	numIFields
)

// Boosts: a match in the title weighs most, the organization's name next,
// then the body and lessons.
const (
	boostTitle = 4.0
	boostOrg   = 2.0
	boostBody  = 1.0
	// boostTitlePhrase is the bonus of a title that holds every word of
	// the query as one exact phrase: such titles rank first.
	boostTitlePhrase = 20.0
)

var ifieldBoost = [numIFields]float64{boostTitle, boostTitle, boostBody, boostBody, boostBody, boostBody, boostOrg}

// field is one text field of an incident and the index field it goes to.
type field struct {
	name  Field            // the field as the API names it
	lang  incidentlib.Lang // "" for fields in no language (org)
	index ifield
	text  func(*incidentlib.Incident) string
}

// fields lists every indexed text field, in the order highlights are
// given.
var fields = []field{
	{FieldTitle, incidentlib.LangEn, ifTitleEn, func(i *incidentlib.Incident) string { return i.Title.En }},
	{FieldTitle, incidentlib.LangKo, ifTitleKo, func(i *incidentlib.Incident) string { return i.Title.Ko }},
	{FieldSummary, incidentlib.LangEn, ifBodyEn, func(i *incidentlib.Incident) string { return i.Summary.En }},
	{FieldSummary, incidentlib.LangKo, ifBodyKo, func(i *incidentlib.Incident) string { return i.Summary.Ko }},
	{FieldLessons, incidentlib.LangEn, ifLessonsEn, func(i *incidentlib.Incident) string { return i.Lessons.En }},
	{FieldLessons, incidentlib.LangKo, ifLessonsKo, func(i *incidentlib.Incident) string { return i.Lessons.Ko }},
	{FieldTrigger, incidentlib.LangEn, ifBodyEn, func(i *incidentlib.Incident) string { return i.Trigger.En }},
	{FieldTrigger, incidentlib.LangKo, ifBodyKo, func(i *incidentlib.Incident) string { return i.Trigger.Ko }},
	{FieldDetection, incidentlib.LangEn, ifBodyEn, func(i *incidentlib.Incident) string { return i.Detection.En }},
	{FieldDetection, incidentlib.LangKo, ifBodyKo, func(i *incidentlib.Incident) string { return i.Detection.Ko }},
	{FieldSymptomsText, incidentlib.LangEn, ifBodyEn, func(i *incidentlib.Incident) string { return i.SymptomsText.En }},
	{FieldSymptomsText, incidentlib.LangKo, ifBodyKo, func(i *incidentlib.Incident) string { return i.SymptomsText.Ko }},
	{FieldOrg, "", ifOrg, func(i *incidentlib.Incident) string { return i.Org }},
}

// fieldGap separates the texts that share an index field, so that no
// phrase spans two of them.
const fieldGap = 100

// Options configure Open.
type Options struct {
	// BatchSize is how many changes one catch-up step applies. Default
	// 2000.
	BatchSize int
	// Logger receives catch-up progress and background errors; default
	// slog.Default().
	Logger *slog.Logger
	// Concurrency is how many searches run at once; the others wait their
	// turn in arrival order. Default GOMAXPROCS: a search is CPU work, and
	// running more at once than there are cores only makes each one wait
	// in the Go scheduler, in no fair order, instead of in line.
	Concurrency int
	// Follow keeps the index following the store from Open to Close, in a
	// goroutine of its own: it catches up after every commit (waiting on
	// the change log's SeqAbove), so that searches rarely wait for a
	// catch-up, and saves the index every saveEvery when it changed.
	Follow bool
	// StoreID is the store's id (storage's DB.StoreID: random, written
	// once into the store), recorded with the index beside the store's
	// path (dir.go): an index recorded with another id was made from
	// another store, and is rebuilt even at the same path. "": the path
	// alone tells the stores apart.
	StoreID string
	// Glossary translates queries into the other language (glossary.go);
	// nil searches each language's words alone.
	Glossary glossary.Reader
}

// saveEvery is how often a following index saves itself when it changed.
const saveEvery = 30 * time.Second

// Index is the search index of one store.
type Index struct {
	db      Store
	path    string
	opts    Options
	seq     atomic.Uint64 // store sequence of the last change applied
	lock    chan struct{} // held while applying changes or saving
	stop    func()        // ends the follower (Options.Follow) and waits for it
	cache   *setCache
	filters *filterCache
	queries *queryCache         // compiled queries (querycache.go)
	turns   *semaphore.Weighted // Options.Concurrency, first come first served
	waiting atomic.Int64        // searches waiting for a turn

	lk           *dirLock      // the directory's lock, held until Close (dir.go)
	identified   bool          // the store's identity is written (dir.go); under lock
	saveFailures atomic.Uint64 // saves that failed (SaveFailures)

	tr atomic.Pointer[translator] // the glossary last compiled (glossary.go)

	mu      sync.RWMutex // guards mem; writers also hold lock
	mem     *memIndex
	dirty   bool // mem differs from the file
	savedAt time.Time
}

// ErrRebuild is returned by Open for an index that cannot be caught up:
// built by another version of the program, made from another store (its
// recorded identity, or a sequence ahead of the store's). Rebuild
// replaces it.
var ErrRebuild = errors.New("the search index must be rebuilt")

// Open opens the index at path for db, creating an empty one if there is
// none, and catches it up with the store; with opts.Follow it then follows
// the store until Close. The directory is locked until Close (ErrLocked if
// another process holds it, dir.go). Returns an error wrapping ErrRebuild
// if the index belongs to another store or program version.
//
// An index that cannot be saved (a full disk) is no error: it serves from
// memory, the failure is logged as a warning and counted
// (SaveFailures), and the next save retries.
func Open(ctx context.Context, db Store, path string, opts Options) (*Index, error) {
	return open(ctx, db, path, opts, false)
}

func open(ctx context.Context, db Store, path string, opts Options, rebuild bool) (*Index, error) {
	if opts.BatchSize == 0 {
		opts.BatchSize = 2000
	}
	if opts.BatchSize < 0 {
		return nil, fmt.Errorf("search: batch size must be positive, got %d", opts.BatchSize)
	}
	if opts.Logger == nil {
		opts.Logger = slog.Default()
	}
	if opts.Concurrency < 0 {
		return nil, fmt.Errorf("search: concurrency must be positive, got %d", opts.Concurrency)
	}
	if opts.Concurrency == 0 {
		opts.Concurrency = runtime.GOMAXPROCS(0)
	}
	lk, err := lockDir(path, db)
	if err != nil {
		return nil, err
	}
	x, err := openLocked(ctx, db, path, opts, rebuild)
	if err != nil {
		lk.release()
		return nil, err
	}
	x.lk = lk
	return x, nil
}

// openLocked is Open once the directory is locked; rebuild starts from an
// empty index whatever the directory holds (its file is replaced by the
// first save).
func openLocked(ctx context.Context, db Store, path string, opts Options, rebuild bool) (*Index, error) {
	x := &Index{db: db, path: path, opts: opts, turns: semaphore.NewWeighted(int64(opts.Concurrency)),
		lock: make(chan struct{}, 1), stop: func() {}, cache: newSetCache(32), filters: newFilterCache(), queries: newQueryCache()}
	_, statErr := os.Stat(filepath.Join(path, indexFile))
	switch {
	case rebuild || errors.Is(statErr, os.ErrNotExist):
		x.mem = newMemIndex()
		x.dirty = true // saved below, with the store's identity
	case statErr != nil:
		return nil, fmt.Errorf("open the search index: %w", statErr)
	default:
		why, err := otherStore(path, identityOf(db, opts))
		if err != nil {
			return nil, fmt.Errorf("open the search index: %w", err)
		}
		if why != "" {
			return nil, fmt.Errorf("%w: %s", ErrRebuild, why)
		}
		m, err := load(path)
		if err != nil {
			return nil, err
		}
		x.mem = m
	}
	seq := x.mem.seq
	if seq > db.Seq() {
		return nil, fmt.Errorf("%w: %s is at store sequence %d, but the store %s is at %d (the index was made from another store)",
			ErrRebuild, path, seq, db.Path(), db.Seq())
	}
	x.seq.Store(seq)
	if seq < db.Seq() {
		opts.Logger.Info("search index catching up", "path", path, "index_seq", seq, "store_seq", db.Seq())
	}
	if err := x.CatchUp(ctx); err != nil {
		return nil, err
	}
	if err := x.saveIfDirty(); err != nil {
		x.saveFailed(err) // serves from memory; the next save retries
	}
	if opts.Follow {
		fctx, cancel := context.WithCancel(context.Background())
		done := make(chan struct{})
		go func() { x.follow(fctx); close(done) }()
		x.stop = sync.OnceFunc(func() { cancel(); <-done })
	}
	return x, nil
}

// saveFailed logs a save that failed and counts it: the index goes on from
// memory.
func (x *Index) saveFailed(err error) {
	x.saveFailures.Add(1)
	x.opts.Logger.Warn("the search index could not be saved; it serves from memory and the next save retries",
		"path", x.path, "err", err.Error())
}

// SaveFailures counts the saves of the index that failed (a full disk):
// the index served from memory meanwhile.
func (x *Index) SaveFailures() uint64 { return x.saveFailures.Load() }

// Close stops following the store (Options.Follow) and saves the index if
// it changed since it was last saved.
func (x *Index) Close() error {
	x.stop()
	defer x.lk.release()
	err := x.saveIfDirty()
	if err != nil {
		x.saveFailures.Add(1)
	}
	return err
}

// saveIfDirty saves the index if it changed since it was last saved.
func (x *Index) saveIfDirty() error {
	x.lock <- struct{}{}
	defer func() { <-x.lock }()
	x.mu.RLock()
	dirty := x.dirty
	x.mu.RUnlock()
	if !dirty {
		return nil
	}
	return x.save()
}

// save writes the index to its file: aside, synced, then renamed over
// the old one. The caller holds x.lock (or is Open), so mem does not
// change.
func (x *Index) save() error {
	x.mu.RLock()
	m := x.mem
	x.mu.RUnlock()
	if m.dead > m.live/8 {
		// Rewriting every posting holds searches up: only once dead
		// entries are many. The file leaves them out in any case.
		x.mu.Lock()
		m.compact()
		x.mu.Unlock()
	}
	if !x.identified {
		// The store's identity before the index: an index file is never
		// there without the record of its store.
		if err := writeIdentity(x.path, identityOf(x.db, x.opts)); err != nil {
			return fmt.Errorf("search: save the index's store identity: %w", err)
		}
		x.identified = true
	}
	file := filepath.Join(x.path, indexFile)
	tmp := file + ".tmp"
	if err := m.writeFile(tmp); err != nil {
		os.Remove(tmp)
		return fmt.Errorf("search: save the index: %w", err)
	}
	if err := os.Rename(tmp, file); err != nil {
		return fmt.Errorf("search: save the index: %w", err)
	}
	if d, err := os.Open(x.path); err == nil {
		_ = d.Sync() // the rename's directory entry; the file itself was synced
		_ = d.Close()
	}
	x.mu.Lock()
	x.dirty = false
	x.savedAt = time.Now()
	x.mu.Unlock()
	return nil
}

// load reads the index file in dir.
func load(dir string) (*memIndex, error) {
	b, err := os.ReadFile(filepath.Join(dir, indexFile))
	if errors.Is(err, os.ErrNotExist) {
		return nil, fmt.Errorf("%w: %s holds no index of this program version (%s)", ErrRebuild, dir, formatVersion)
	}
	if err != nil {
		return nil, fmt.Errorf("open the search index: %w", err)
	}
	m, err := decodeIndex(b)
	if err != nil {
		return nil, fmt.Errorf("%w: %s: %v", ErrRebuild, dir, err)
	}
	return m, nil
}

// Path is the index's directory.
func (x *Index) Path() string { return x.path }

// DiskBytes is the size of the files in the index's directory.
func (x *Index) DiskBytes() int64 {
	var n int64
	_ = filepath.WalkDir(x.path, func(_ string, d os.DirEntry, err error) error {
		if err == nil && !d.IsDir() {
			if fi, err := d.Info(); err == nil {
				n += fi.Size()
			}
		}
		return nil
	})
	return n
}

// Seq is the store sequence of the last change the index applied.
func (x *Index) Seq() uint64 { return x.seq.Load() }

// DocCount is the number of incidents in the index.
func (x *Index) DocCount() (uint64, error) {
	x.mu.RLock()
	defer x.mu.RUnlock()
	return uint64(x.mem.live), nil
}

// Rebuild builds a new index of every incident of db at path, replacing
// any index there only once the new one is saved (if it cannot be saved,
// the new index serves from memory, as Open's does).
func Rebuild(ctx context.Context, db Store, path string, opts Options) (*Index, error) {
	_ = os.RemoveAll(path + ".new") // left by an older version's rebuild
	return open(ctx, db, path, opts, true)
}
