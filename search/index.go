// Package search is the library's full-text index: English and Korean
// text with BM25 ranking, highlights, and the store's filters.
//
// The index is derived from the store and never the other way round. It is
// a bleve v2 index (scorch) in a directory next to the store's file. It
// records, in the same bleve batch as the documents, the store sequence
// (storage.DB.Seq) of the last change it applied, and catches up from the
// store's change log (storage.DB.ChangesSince): at open, in the background
// after commits (Follow), and before every search, so that a search that
// starts after a write was acknowledged sees it. Deleted incidents are
// removed by their tombstones. Should the process die between the store's
// commit and the index update, or before bleve persisted a batch, the
// index reopens at an earlier sequence and catches up.
//
// Filters are the store's own (storage.DB.MatchSet): a search with a
// filter keeps the hits whose incident is in the store's set, so a filter
// means exactly what it means for incidents.
package search

import (
	"context"
	"encoding/binary"
	"errors"
	"fmt"
	"log/slog"
	"os"
	"sync/atomic"

	"github.com/blevesearch/bleve/v2"
	"github.com/blevesearch/bleve/v2/document"
	"github.com/blevesearch/bleve/v2/index/scorch"
	"github.com/blevesearch/bleve/v2/mapping"
	bindex "github.com/blevesearch/bleve_index_api"
	bolt "go.etcd.io/bbolt"

	"github.com/incidentlib/incidentlib"
	"github.com/incidentlib/incidentlib/storage"
)

// formatVersion names the analyzer and the document layout. An index
// built with another one is rebuilt.
const formatVersion = "incidentlib-search-1"

// Internal keys of the bleve index.
var (
	keyFormat = []byte("format") // formatVersion
	keySeq    = []byte("seq")    // u64 store sequence of the last change applied
)

// field is one indexed text field.
type field struct {
	name  Field            // the field as the API names it
	lang  incidentlib.Lang // "" for fields in no language (org)
	index string           // the field's name in the bleve index
	boost float64
	text  func(*incidentlib.Incident) string
}

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

// Boosts: a match in the title weighs most; summary and lessons are the
// body; the shorter trigger, detection and symptom texts weigh a little
// less so that they do not outrank the summary on length normalization.
const (
	boostTitle  = 4.0
	boostOrg    = 2.0
	boostBody   = 1.0
	boostDetail = 0.8
	// boostTitlePhrase is the bonus of a title that holds every word of
	// the query as one exact phrase: such titles rank first.
	boostTitlePhrase = 20.0
)

// fields lists every indexed text field, in the order highlights are
// given.
var fields = []field{
	{FieldTitle, incidentlib.LangEn, "title_en", boostTitle, func(i *incidentlib.Incident) string { return i.Title.En }},
	{FieldTitle, incidentlib.LangKo, "title_ko", boostTitle, func(i *incidentlib.Incident) string { return i.Title.Ko }},
	{FieldSummary, incidentlib.LangEn, "summary_en", boostBody, func(i *incidentlib.Incident) string { return i.Summary.En }},
	{FieldSummary, incidentlib.LangKo, "summary_ko", boostBody, func(i *incidentlib.Incident) string { return i.Summary.Ko }},
	{FieldLessons, incidentlib.LangEn, "lessons_en", boostBody, func(i *incidentlib.Incident) string { return i.Lessons.En }},
	{FieldLessons, incidentlib.LangKo, "lessons_ko", boostBody, func(i *incidentlib.Incident) string { return i.Lessons.Ko }},
	{FieldTrigger, incidentlib.LangEn, "trigger_en", boostDetail, func(i *incidentlib.Incident) string { return i.Trigger.En }},
	{FieldTrigger, incidentlib.LangKo, "trigger_ko", boostDetail, func(i *incidentlib.Incident) string { return i.Trigger.Ko }},
	{FieldDetection, incidentlib.LangEn, "detection_en", boostDetail, func(i *incidentlib.Incident) string { return i.Detection.En }},
	{FieldDetection, incidentlib.LangKo, "detection_ko", boostDetail, func(i *incidentlib.Incident) string { return i.Detection.Ko }},
	{FieldSymptomsText, incidentlib.LangEn, "symptoms_en", boostDetail, func(i *incidentlib.Incident) string { return i.SymptomsText.En }},
	{FieldSymptomsText, incidentlib.LangKo, "symptoms_ko", boostDetail, func(i *incidentlib.Incident) string { return i.SymptomsText.Ko }},
	{FieldOrg, "", "org", boostOrg, func(i *incidentlib.Incident) string { return i.Org }},
}

var fieldByIndex = func() map[string]*field {
	m := map[string]*field{}
	for i := range fields {
		m[fields[i].index] = &fields[i]
	}
	return m
}()

// fieldSeq holds, stored but not indexed, the store sequence of the
// record a document was made from, for Check.
const fieldSeq = "seq"

// Text fields are indexed with positions and offsets (term vectors):
// phrases need the positions, highlights the offsets. Nothing is stored:
// highlights are cut from the store's record.
const textOptions = bindex.IndexField | bindex.IncludeTermVectors

// newDocument makes the index document of inc, stored at seq.
func newDocument(inc *incidentlib.Incident, seq uint64) *document.Document {
	d := document.NewDocument(inc.ID)
	for i := range fields {
		if t := fields[i].text(inc); t != "" {
			d.AddField(document.NewTextFieldCustom(fields[i].index, nil, []byte(t), textOptions, analyzer))
		}
	}
	d.AddField(document.NewNumericFieldWithIndexingOptions(fieldSeq, nil, float64(seq), bindex.StoreField))
	return d
}

// indexMapping is the bleve mapping: documents are built by newDocument (and
// analyzed by the library's analyzer) rather than mapped, so the mapping
// only turns dynamic mapping off and chooses BM25 scoring.
func indexMapping() *mapping.IndexMappingImpl {
	m := bleve.NewIndexMapping()
	m.ScoringModel = bindex.BM25Scoring
	m.IndexDynamic = false
	m.StoreDynamic = false
	m.DocValuesDynamic = false
	m.DefaultMapping = bleve.NewDocumentDisabledMapping()
	return m
}

// Options configure Open.
type Options struct {
	// BatchSize is how many changes one bleve batch applies. Default 2000.
	BatchSize int
	// Logger receives catch-up progress and background errors; default
	// slog.Default().
	Logger *slog.Logger
}

// Index is the search index of one store.
type Index struct {
	db    *storage.DB
	bi    bleve.Index
	path  string
	opts  Options
	seq   atomic.Uint64 // store sequence of the last change applied
	lock  chan struct{} // held while applying changes
	kick  chan struct{} // Notify -> Follow
	cache *setCache
}

// ErrRebuild is returned by Open for an index that cannot be caught up:
// built by another version of the program, or ahead of the store (made
// from another store). Rebuild replaces it.
var ErrRebuild = errors.New("the search index must be rebuilt")

// Open opens the index at path for db, creating an empty one if there is
// none, and catches it up with the store. It does not block on a large
// catch-up beyond ctx. Returns an error wrapping ErrRebuild if the index
// belongs to another store or program version.
func Open(ctx context.Context, db *storage.DB, path string, opts Options) (*Index, error) {
	if opts.BatchSize == 0 {
		opts.BatchSize = 2000
	}
	if opts.BatchSize < 0 {
		return nil, fmt.Errorf("search: batch size must be positive, got %d", opts.BatchSize)
	}
	if opts.Logger == nil {
		opts.Logger = slog.Default()
	}
	bi, err := openBleve(path, false)
	if err != nil {
		return nil, err
	}
	x := &Index{db: db, bi: bi, path: path, opts: opts,
		lock: make(chan struct{}, 1), kick: make(chan struct{}, 1), cache: newSetCache(32)}
	seq, err := x.readMeta()
	if err == nil && seq > db.Seq() {
		err = fmt.Errorf("%w: %s is at store sequence %d, but the store %s is at %d (the index was made from another store)",
			ErrRebuild, path, seq, db.Path(), db.Seq())
	}
	if err != nil {
		bi.Close()
		return nil, err
	}
	x.seq.Store(seq)
	if seq < db.Seq() {
		opts.Logger.Info("search index catching up", "path", path, "index_seq", seq, "store_seq", db.Seq())
	}
	if err := x.CatchUp(ctx); err != nil {
		bi.Close()
		return nil, err
	}
	return x, nil
}

// lockTimeout is how long opening waits for an index another process
// holds.
const lockTimeout = "1s"

// openBleve opens the bleve index at path, creating it if it does not
// exist (unless readOnly).
func openBleve(path string, readOnly bool) (bleve.Index, error) {
	_, statErr := os.Stat(path)
	if errors.Is(statErr, os.ErrNotExist) && !readOnly {
		bi, err := bleve.NewUsing(path, indexMapping(), scorch.Name, scorch.Name, map[string]any{"bolt_timeout": lockTimeout})
		if err != nil {
			return nil, fmt.Errorf("create the search index %s: %w", path, err)
		}
		b := bi.NewBatch()
		b.SetInternal(keyFormat, []byte(formatVersion))
		b.SetInternal(keySeq, u64(0))
		if err := bi.Batch(b); err != nil {
			bi.Close()
			return nil, fmt.Errorf("create the search index %s: %w", path, err)
		}
		return bi, nil
	}
	if statErr != nil {
		return nil, fmt.Errorf("open the search index: %w", statErr)
	}
	// Batches wait until bleve persisted them (scorch's Close does not
	// persist what is pending), so the sequence on disk is the one applied.
	bi, err := bleve.OpenUsing(path, map[string]any{"read_only": readOnly, "bolt_timeout": lockTimeout})
	if errors.Is(err, bolt.ErrTimeout) {
		return nil, fmt.Errorf("open the search index %s: another process holds it (waited %s)", path, lockTimeout)
	}
	if err != nil {
		return nil, fmt.Errorf("open the search index %s: %w", path, err)
	}
	return bi, nil
}

// readMeta checks the format and returns the sequence of the index.
func (x *Index) readMeta() (uint64, error) { return readMeta(x.bi, x.path) }

func readMeta(bi bleve.Index, path string) (uint64, error) {
	f, err := bi.GetInternal(keyFormat)
	if err != nil {
		return 0, err
	}
	if string(f) != formatVersion {
		return 0, fmt.Errorf("%w: %s has format %q, this program writes %q", ErrRebuild, path, f, formatVersion)
	}
	v, err := bi.GetInternal(keySeq)
	if err != nil {
		return 0, err
	}
	if len(v) != 8 {
		return 0, fmt.Errorf("%w: %s has no store sequence", ErrRebuild, path)
	}
	return binary.BigEndian.Uint64(v), nil
}

func u64(n uint64) []byte { return binary.BigEndian.AppendUint64(nil, n) }

// Close closes the index.
func (x *Index) Close() error { return x.bi.Close() }

// Path is the index's directory.
func (x *Index) Path() string { return x.path }

// Seq is the store sequence of the last change the index applied.
func (x *Index) Seq() uint64 { return x.seq.Load() }

// DocCount is the number of incidents in the index.
func (x *Index) DocCount() (uint64, error) { return x.bi.DocCount() }

// CatchUp applies every change the store committed before the call. It
// costs one atomic load when the index is current. Concurrent callers
// wait for one another (or for ctx).
func (x *Index) CatchUp(ctx context.Context) error {
	if x.seq.Load() >= x.db.Seq() {
		return nil
	}
	select {
	case x.lock <- struct{}{}:
	case <-ctx.Done():
		return incidentlib.Errorf(incidentlib.ETIMEOUT, "the search index was catching up when the request ran out of time")
	}
	defer func() { <-x.lock }()
	// The next batch is read (and its records decoded) while bleve
	// indexes the current one.
	var ahead chan changePage
	for {
		var pg changePage
		if ahead != nil {
			pg = <-ahead
			ahead = nil
		} else {
			if x.seq.Load() >= x.db.Seq() {
				return nil
			}
			pg = x.readChanges(ctx, x.seq.Load())
		}
		if pg.err != nil {
			return pg.err
		}
		// Fewer than a batch: the read saw every change up to target.
		next := pg.target
		if full := len(pg.changes) == x.opts.BatchSize; full {
			next = pg.changes[len(pg.changes)-1].Seq
			ahead = make(chan changePage, 1)
			go func() { ahead <- x.readChanges(ctx, next) }()
		} else if len(pg.changes) > 0 {
			next = max(next, pg.changes[len(pg.changes)-1].Seq)
		}
		if err := x.apply(pg.changes, next); err != nil {
			if ahead != nil {
				<-ahead
			}
			return err
		}
	}
}

// changePage is one read of the change log, with the store sequence read
// before it.
type changePage struct {
	changes []storage.Change
	target  uint64
	err     error
}

func (x *Index) readChanges(ctx context.Context, from uint64) changePage {
	target := x.db.Seq()
	changes, err := x.db.ChangesSince(ctx, from, x.opts.BatchSize)
	return changePage{changes, target, err}
}

// apply writes changes and the new sequence in one bleve batch.
func (x *Index) apply(changes []storage.Change, seq uint64) error {
	b := x.bi.NewBatch()
	for _, c := range changes {
		if c.Deleted {
			b.Delete(c.ID)
			continue
		}
		if err := b.IndexAdvanced(newDocument(c.Incident, c.Seq)); err != nil {
			return fmt.Errorf("search: index %s: %w", c.ID, err)
		}
	}
	b.SetInternal(keySeq, u64(seq))
	if err := x.bi.Batch(b); err != nil {
		return fmt.Errorf("search: apply changes up to %d: %w", seq, err)
	}
	x.seq.Store(seq)
	return nil
}

// Notify tells Follow that the store committed; it never blocks. Chain it
// into storage.DB.OnCommit.
func (x *Index) Notify() {
	select {
	case x.kick <- struct{}{}:
	default:
	}
}

// Follow catches the index up after every Notify until ctx is done, so
// that searches rarely wait for a catch-up. Errors are logged; the next
// search or notification retries.
func (x *Index) Follow(ctx context.Context) {
	for {
		select {
		case <-ctx.Done():
			return
		case <-x.kick:
		}
		if err := x.CatchUp(ctx); err != nil && ctx.Err() == nil {
			x.opts.Logger.Error("search index catch-up failed", "err", err, "index_seq", x.Seq(), "store_seq", x.db.Seq())
		}
	}
}

// Rebuild builds a new index of every incident of db at path, replacing
// any index there only once the new one is complete.
func Rebuild(ctx context.Context, db *storage.DB, path string, opts Options) (*Index, error) {
	tmp := path + ".new"
	if err := os.RemoveAll(tmp); err != nil {
		return nil, err
	}
	x, err := Open(ctx, db, tmp, opts)
	if err != nil {
		os.RemoveAll(tmp)
		return nil, err
	}
	if err := x.Close(); err != nil {
		return nil, err
	}
	if err := os.RemoveAll(path); err != nil {
		return nil, err
	}
	if err := os.Rename(tmp, path); err != nil {
		return nil, err
	}
	return Open(ctx, db, path, opts)
}
