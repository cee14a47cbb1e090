// Package storage implements the incidentlib services on one bbolt file.
//
// Layout: every bucket is named once below and created in one write
// transaction at open. Records are kept as canonical IL-JSON behind an
// 8-byte version (the change sequence of the write that stored them).
// Secondary indexes (roaring bitmaps of incident numbers per term,
// organization, year and flag; ordered keys per sort order; reverse links)
// are written in the same transaction as the record.
package storage

import (
	"crypto/rand"
	"encoding/binary"
	"encoding/hex"
	"errors"
	"fmt"
	"log/slog"
	"os"
	"path/filepath"
	"runtime/debug"
	"strings"
	"sync/atomic"
	"time"

	lru "github.com/hashicorp/golang-lru/v2"
	bolt "go.etcd.io/bbolt"
	berrors "go.etcd.io/bbolt/errors"

	"github.com/incidentlib/incidentlib"
)

// Bucket names, declared once.
var (
	bucketMeta        = []byte("meta")        // meta keys below
	bucketIncidents   = []byte("incidents")   // u32 number -> u64 version + IL-JSON
	bucketSortKeys    = []byte("sortkeys")    // u32 number -> sortKey
	bucketOrders      = []byte("orders")      // order byte + order key -> nil
	bucketPostings    = []byte("postings")    // posting name -> roaring bitmap of numbers
	bucketOrgs        = []byte("orgs")        // slug -> {"slug","name"}
	bucketRecurrences = []byte("recurrences") // u32 target + u32 source -> nil
	bucketRelatedRev  = []byte("relatedrev")  // u32 target + u32 source -> nil
	bucketTaxonomy    = []byte("taxonomy")    // kind \x00 slug -> term JSON
	bucketChanges     = []byte("changes")     // u64 seq -> change JSON
	bucketChangeIdx   = []byte("changeidx")   // u32 number -> u64 seq of its latest change
	bucketAliases     = []byte("aliases")     // u32 number merged away -> u32 number that absorbed it
	bucketTokens      = []byte("tokens")      // token name -> token JSON, its SHA-256, never the token (tokens.go)
	bucketHistory     = []byte("history")     // u32 number + u32 version -> history entry JSON (history.go)
	bucketVersions    = []byte("versions")    // u32 number + u32 version -> IL-JSON of a superseded version
	bucketVersionLog  = []byte("versionlog")  // u64 seq -> u32 number + u32 version: every version, in order

	allBuckets = [][]byte{bucketMeta, bucketIncidents, bucketSortKeys, bucketOrders, bucketPostings, bucketAliases,
		bucketOrgs, bucketRecurrences, bucketRelatedRev, bucketTaxonomy, bucketChanges, bucketChangeIdx, bucketTokens,
		bucketHistory, bucketVersions, bucketVersionLog}
)

// Meta keys.
var (
	metaSchema = []byte("schema") // u32 schema version
	metaSeq    = []byte("seq")    // u64 last change sequence
	// metaStoreID is the store's identity: 16 random bytes, hex, written
	// once at creation (or the first writable open of an older store) and
	// kept for the file's life. Copies of the file (backups) share it;
	// a replica has its own. The search index records it (StoreID).
	metaStoreID = []byte("store_id")
)

// schemaVersion is the store's format version (metaSchema): 2 added the
// history (migrate.go upgrades a version 1 store in place).
const schemaVersion = 2

// Options configure Open.
type Options struct {
	// OpenTimeout is how long Open waits for the file lock held by another
	// process before it fails. Default 1s; must be positive.
	OpenTimeout time.Duration
	// Taxonomy is the built-in taxonomy: it seeds a new store, and an
	// existing store gains the terms of it that it lacks; required. The
	// store's own taxonomy is authoritative afterwards (taxonomy.go).
	Taxonomy *incidentlib.Taxonomy
	// Glossary is the built-in glossary (seeds.Glossary): it seeds the
	// store's at its creation, or at the first writable open of an older
	// store; the store's own is authoritative afterwards (glossary.go).
	// nil seeds nothing (until an open gives one).
	Glossary []incidentlib.GlossaryEntry
	// ReadOnly opens the file without the write lock (check, export).
	ReadOnly bool
	// RecordCache is how many decoded records are kept in memory. Default
	// 10,000; 0 disables the cache.
	RecordCache int
	// NoSync skips fsync at commit (benchmarks only; never in serve).
	NoSync bool
	// UpstreamLinks lets related and recurrence_of name incidents that
	// are not in this store: they resolve from an upstream library
	// (serve --upstream). Check then lists them as upstream links, not as
	// dangling ones. See links.go.
	UpstreamLinks bool
	// ObserveCommit, if set, receives the duration of every write
	// transaction that committed (the commit-latency histogram). It is
	// called after the commit, outside the transaction, and must not
	// block.
	ObserveCommit func(time.Duration)
	// Logger receives the one line that reports a corrupt file and the
	// warning of a full disk (fault.go); default slog.Default().
	Logger *slog.Logger
	// MaxRecordBytes bounds one record's canonical IL-JSON on writes and
	// applied changes (incidentlib.CheckRecordSize); check lists stored
	// records over it. Unit: bytes. Default (0)
	// incidentlib.DefaultMaxRecordBytes.
	MaxRecordBytes int
	// AllowSelfReview lets a reviewer approve an incident they wrote a
	// version of since its last approval (a library of one person);
	// default false: SELF_REVIEW.
	AllowSelfReview bool
}

// DB is the incident store.
type DB struct {
	bolt  *bolt.DB
	path  string
	taxes taxState // the store's taxonomy and organization aliases (taxonomy.go)
	cache *lru.Cache[uint32, *cachedIncident]
	seq   atomic.Uint64
	dense denseCache // the postings the aggregates cross, as bitsets (dense.go)

	// Now stamps updated_at on writes that do not keep it.
	Now func() time.Time

	observeCommit func(time.Duration) // Options.ObserveCommit, or a no-op

	mut mutState // how mutations share commits (mutate.go)

	orgs orgCache // decoded organizations (query.go)

	upstreamLinks bool     // Options.UpstreamLinks
	maxRecord     int      // Options.MaxRecordBytes
	watch         seqWatch // wakes readers waiting for the sequence to grow (changes.go)

	fault faultState // a corrupt file, a full disk (fault.go)

	storeID string // metaStoreID, "" in an older store opened read-only

	tokens tokenState // the API tokens, in memory (tokens.go)

	allowSelfReview bool // Options.AllowSelfReview
	// noHistory marks an older store opened read-only: it has no history
	// buckets until a writable open upgrades it (migrate.go).
	noHistory bool
}

type cachedIncident struct {
	version uint64
	inc     *incidentlib.Incident
	// seenAt is 1 + a store sequence at which the store held this version
	// of the record, or 0. A read transaction of the same sequence sees the
	// same records (every write that changes one advances the sequence),
	// so it takes the entry without looking the record up (readpath.go).
	seenAt atomic.Uint64
}

// ErrLocked is returned when the file is held by another process.
var ErrLocked = errors.New("the database file is locked by another process")

// Open opens or creates the store at path.
func Open(path string, opts Options) (*DB, error) {
	if opts.OpenTimeout == 0 {
		opts.OpenTimeout = time.Second
	}
	if opts.OpenTimeout < 0 {
		return nil, fmt.Errorf("open timeout must be positive, got %s", opts.OpenTimeout)
	}
	if opts.Taxonomy == nil {
		return nil, errors.New("storage: a taxonomy is required")
	}
	if opts.MaxRecordBytes < 0 {
		return nil, fmt.Errorf("record size limit must not be negative, got %d bytes", opts.MaxRecordBytes)
	}
	if opts.RecordCache < 0 {
		return nil, fmt.Errorf("record cache size must not be negative, got %d", opts.RecordCache)
	}
	if opts.Logger == nil {
		opts.Logger = slog.Default()
	}
	if !opts.ReadOnly {
		if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
			return nil, fmt.Errorf("create the database directory: %w", err)
		}
	}
	bopts := &bolt.Options{
		Timeout: opts.OpenTimeout,
		// The hashmap freelist and no freelist sync: a large freelist is
		// never written on every commit (seed 000: each 16 kB append wrote
		// a 7.8 MB freelist), and free pages are found in O(1).
		FreelistType:   bolt.FreelistMapType,
		NoFreelistSync: true,
		ReadOnly:       opts.ReadOnly,
		NoSync:         opts.NoSync,
	}
	b, err := openChecked(path, bopts)
	if err != nil {
		return nil, err
	}
	db := &DB{bolt: b, path: path, Now: time.Now, upstreamLinks: opts.UpstreamLinks,
		observeCommit: opts.ObserveCommit, maxRecord: opts.MaxRecordBytes, allowSelfReview: opts.AllowSelfReview}
	db.fault.logger = opts.Logger
	db.taxes.builtin = opts.Taxonomy
	db.taxes.glossSeed = opts.Glossary
	if db.observeCommit == nil {
		db.observeCommit = func(time.Duration) {}
	}
	if opts.RecordCache > 0 {
		db.cache, _ = lru.New[uint32, *cachedIncident](opts.RecordCache)
	}
	if err := db.load(opts.ReadOnly); err != nil {
		b.Close()
		return nil, err
	}
	if err := db.loadTokens(opts.ReadOnly); err != nil {
		b.Close()
		return nil, fmt.Errorf("read the tokens of %s: %w", path, err)
	}
	return db, nil
}

// openChecked opens the file with bbolt, refusing an existing empty file
// and one with a damaged page (fault.go): an existing file is first opened
// read-only and walked page by page (preflight), and only then, for
// writing, opened again.
func openChecked(path string, bopts *bolt.Options) (b *bolt.DB, err error) {
	fi, statErr := os.Stat(path)
	switch {
	case statErr == nil && fi.Size() == 0:
		return nil, fmt.Errorf("open %s: the file is empty (0 bytes), not an incidentlib store; "+
			"if a first start was interrupted, delete it and start again, otherwise restore it from a backup", path)
	case statErr == nil && fi.IsDir():
		return nil, fmt.Errorf("open %s: it is a directory, not an incidentlib store", path)
	}
	open := func(o *bolt.Options) (b *bolt.DB, err error) {
		defer func() {
			if r := recover(); r != nil {
				ce, ok := corruption(r, path)
				if !ok {
					panic(r)
				}
				b, err = nil, ce
			}
		}()
		defer faultGuard(debug.SetPanicOnFault(true))
		b, err = bolt.Open(path, 0o600, o)
		if err == nil {
			return b, nil
		}
		if errors.Is(err, berrors.ErrTimeout) {
			return nil, fmt.Errorf("open %s: %w (waited %s)", path, ErrLocked, o.Timeout)
		}
		if errors.Is(err, berrors.ErrInvalid) || errors.Is(err, berrors.ErrChecksum) || errors.Is(err, berrors.ErrVersionMismatch) ||
			strings.Contains(err.Error(), "file size too small") {
			return nil, &CorruptError{Path: path, Page: 0, Detail: "both meta pages (0 and 1) are unreadable: " + err.Error()}
		}
		return nil, fmt.Errorf("open %s: %w", path, err)
	}
	if statErr != nil {
		return open(bopts) // a new store (or an error bbolt reports)
	}
	ro := *bopts
	ro.ReadOnly = true
	pre, err := open(&ro)
	if err != nil {
		return nil, err
	}
	if err := preflight(pre, path, fi.Size()); err != nil {
		pre.Close()
		return nil, err
	}
	if bopts.ReadOnly {
		return pre, nil
	}
	pre.Close()
	return open(bopts)
}

// load checks or creates the buckets and reads the sequence.
func (db *DB) load(readOnly bool) (err error) {
	defer db.recoverFault(&err)
	defer faultGuard(debug.SetPanicOnFault(true))
	if !readOnly {
		if err := db.init(); err != nil {
			return err
		}
	} else {
		err := db.bolt.View(func(tx *bolt.Tx) error {
			for _, name := range allBuckets {
				// A store written before tokens has no tokens bucket: it
				// has no tokens (a writable open creates it).
				if tx.Bucket(name) == nil && string(name) != string(bucketTokens) && !historyBucket(name) {
					return fmt.Errorf("%s is not an incidentlib store (no bucket %q)", db.path, name)
				}
			}
			if v := tx.Bucket(bucketMeta).Get(metaSchema); len(v) == 4 {
				if got := binary.BigEndian.Uint32(v); got > schemaVersion {
					return newerStore(db.path, got)
				} else if got < 2 {
					// Read-only: not upgraded; it has no history yet.
					db.noHistory = true
				}
			}
			return nil
		})
		if err != nil {
			return err
		}
	}
	return db.bolt.View(func(tx *bolt.Tx) error {
		meta := tx.Bucket(bucketMeta)
		db.seq.Store(getU64(meta.Get(metaSeq)))
		db.storeID = string(meta.Get(metaStoreID))
		if err := db.loadGlossary(tx); err != nil { // glossary.go
			return err
		}
		return db.loadTaxonomy(tx)
	})
}

// init creates every bucket and seeds or completes the taxonomy
// (initTaxonomy), in one transaction.
func (db *DB) init() error {
	return db.bolt.Update(func(tx *bolt.Tx) error {
		for _, name := range allBuckets {
			if _, err := tx.CreateBucketIfNotExists(name); err != nil {
				return fmt.Errorf("create bucket %s: %w", name, err)
			}
		}
		meta := tx.Bucket(bucketMeta)
		if v := meta.Get(metaSchema); v != nil {
			got := binary.BigEndian.Uint32(v)
			if got > schemaVersion {
				return newerStore(db.path, got)
			}
			if got < schemaVersion {
				if err := db.migrate(tx, got); err != nil {
					return fmt.Errorf("upgrade %s from store format version %d to %d: %w", db.path, got, schemaVersion, err)
				}
			}
		}
		if v := meta.Get(metaSchema); len(v) != 4 || binary.BigEndian.Uint32(v) != schemaVersion {
			// Written only when it changes: an open of a store as it is
			// writes nothing (a full disk still opens).
			if err := meta.Put(metaSchema, binary.BigEndian.AppendUint32(nil, schemaVersion)); err != nil {
				return err
			}
		}
		if meta.Get(metaStoreID) == nil {
			id := make([]byte, 16)
			if _, err := rand.Read(id); err != nil {
				return err
			}
			if err := meta.Put(metaStoreID, []byte(hex.EncodeToString(id))); err != nil {
				return err
			}
		}
		if err := indexDurationsOnce(tx); err != nil { // durations.go
			return err
		}
		if err := indexPeriodsOnce(tx); err != nil { // periods.go
			return err
		}
		if err := db.initGlossary(tx); err != nil { // glossary.go
			return err
		}
		return db.initTaxonomy(tx)
	})
}

// Close closes the store.
func (db *DB) Close() error {
	db.stopTokens()
	return db.bolt.Close()
}

// Path is the file's path.
func (db *DB) Path() string { return db.path }

// StoreID is the store's identity, random and written once at creation:
// the search index records it, so that an index is never shared by two
// stores. "" for a store made by an older version and opened read-only
// since.
func (db *DB) StoreID() string { return db.storeID }

// Bolt exposes the bbolt handle for statistics and backups.
func (db *DB) Bolt() *bolt.DB { return db.bolt }

func getU64(b []byte) uint64 {
	if len(b) != 8 {
		return 0
	}
	return binary.BigEndian.Uint64(b)
}

func u32key(n uint32) []byte { return binary.BigEndian.AppendUint32(make([]byte, 0, 4), n) }
func u64key(n uint64) []byte { return binary.BigEndian.AppendUint64(make([]byte, 0, 8), n) }
