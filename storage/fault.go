package storage

import (
	"errors"
	"fmt"
	"log/slog"
	"regexp"
	"runtime"
	"runtime/debug"
	"slices"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"

	bolt "go.etcd.io/bbolt"

	"github.com/incidentlib/incidentlib"
)

// Faults of the file under the store: a damaged page and a full disk.
//
// bbolt reports a damaged page by panicking (an assertion on the page's
// header, a page id above the file's high-water mark), and reading a page
// past the end of a truncated file is a memory fault of the mapping. The
// store turns both into a *CorruptError at its transaction boundaries
// (view, viewLatest, update, mutate and the read snapshot's reads, which
// run in view): each defers recoverFault and, for the length of the
// transaction, asks the runtime to turn a memory fault into a panic
// (debug.SetPanicOnFault). A panic that is neither bbolt's nor a memory
// fault is a bug and goes on as a panic.
//
// Opening a file walks every page of it once, read-only and under the same
// recovery, before bbolt opens it for writing (preflight): bbolt's
// writable open rebuilds its free list by walking the pages in a goroutine
// of its own (the store does not sync the free list), where a panic would
// end the process before anything could recover it.

// CorruptError is a damaged store file. Its Error names the file and the
// page and says what to do; a client only ever sees ErrorMessage's
// "internal error" with code STORE_CORRUPT.
type CorruptError struct {
	Path string
	// Page is the damaged page, -1 when unknown.
	Page int64
	// Detail is what bbolt or the walk found.
	Detail string
}

func (e *CorruptError) Error() string {
	where := "page unknown"
	if e.Page >= 0 {
		where = "page " + strconv.FormatInt(e.Page, 10)
	}
	return fmt.Sprintf("the store file %s is corrupt (%s: %s); stop the server and restore the file from a backup "+
		"(incidentlib backup makes one; see \"Restore\" in docs/operations.md)", e.Path, where, e.Detail)
}

// As makes the error an application error with code STORE_CORRUPT and a
// message that names neither the file nor the page.
func (e *CorruptError) As(target any) bool {
	if t, ok := target.(**incidentlib.Error); ok {
		*t = &incidentlib.Error{Code: incidentlib.ESTORECORRUPT, Message: "internal error"}
		return true
	}
	return false
}

// ErrCorrupt matches every *CorruptError with errors.Is.
var ErrCorrupt = errors.New("the store file is corrupt")

// Is makes errors.Is(err, ErrCorrupt) true.
func (e *CorruptError) Is(target error) bool { return target == ErrCorrupt }

// faultState is what the store knows of its file's faults.
type faultState struct {
	logger  *slog.Logger
	corrupt atomic.Pointer[CorruptError] // the first corruption found
	logOnce sync.Once
	// full counts the writes refused for a full disk; inFull is set while
	// the last write failed so (a warning is logged when it becomes set).
	full   atomic.Uint64
	inFull atomic.Bool
	// batches is the writes' group commit (groupCommit), whose shared
	// transactions run under the same recovery as every other.
	batches batcher
}

// recoverFault, deferred at a transaction boundary, turns a panic of bbolt
// or a memory fault into a *CorruptError in *errp; any other panic goes
// on.
func (db *DB) recoverFault(errp *error) {
	r := recover()
	if r == nil {
		return
	}
	ce, ok := corruption(r, db.path)
	if !ok {
		panic(r)
	}
	*errp = db.markCorrupt(ce)
}

// markCorrupt records ce as the store's corruption (the first one found
// stays) and logs it, once per store.
func (db *DB) markCorrupt(ce *CorruptError) *CorruptError {
	db.fault.corrupt.CompareAndSwap(nil, ce)
	first := db.fault.corrupt.Load()
	db.fault.logOnce.Do(func() {
		db.fault.logger.Error("STORE_CORRUPT: "+first.Error(), "code", incidentlib.ESTORECORRUPT,
			"file", first.Path, "page", first.Page, "detail", first.Detail)
	})
	return ce
}

// Corrupt returns the first corruption a transaction of the store found
// since open, or nil.
func (st Maintenance) Corrupt() error {
	if ce := st.db.fault.corrupt.Load(); ce != nil {
		return ce
	}
	return nil
}

// faultAddr is the panic value of a memory fault at a non-nil address
// (debug.SetPanicOnFault): in this program only the file's mapping
// faults.
type faultAddr interface{ Addr() uintptr }

// pageInMessage finds the page id in bbolt's panic messages ("Page
// expected to be: 23, ...", "page 23: has unexpected type", "pgid (23)
// above high water mark", "invalid page type: 23: 10").
var pageInMessage = regexp.MustCompile(`(?i)(?:page expected to be: |page |pgid \(|page type: )(\d+)`)

// corruption says whether the panic value r, being recovered, is bbolt's
// or a memory fault, and describes it.
func corruption(r any, path string) (*CorruptError, bool) {
	if _, ok := r.(faultAddr); ok {
		return &CorruptError{Path: path, Page: -1, Detail: fmt.Sprintf("%v (reading past the end of the file? it may be truncated)", r)}, true
	}
	if !panickedInBolt() {
		return nil, false
	}
	msg := fmt.Sprint(r)
	ce := &CorruptError{Path: path, Page: -1, Detail: msg}
	if m := pageInMessage.FindStringSubmatch(msg); m != nil {
		ce.Page, _ = strconv.ParseInt(m[1], 10, 64)
	}
	return ce, true
}

// panickedInBolt reports whether the function that called panic, as seen
// from a deferred function recovering it, is in bbolt.
func panickedInBolt() bool {
	pcs := make([]uintptr, 64)
	n := runtime.Callers(1, pcs)
	frames := runtime.CallersFrames(pcs[:n])
	afterPanic := false
	for {
		f, more := frames.Next()
		switch {
		case f.Function == "runtime.gopanic":
			afterPanic = true
		case afterPanic && !strings.HasPrefix(f.Function, "runtime."):
			return strings.HasPrefix(f.Function, "go.etcd.io/bbolt")
		}
		if !more {
			return false
		}
	}
}

// faultGuard, deferred, restores the goroutine's panic-on-fault setting.
// Usage, at the top of a function that runs a transaction (recoverFault
// deferred first, so that it runs last):
//
//	defer db.recoverFault(&err)
//	defer faultGuard(debug.SetPanicOnFault(true))
func faultGuard(old bool) { debug.SetPanicOnFault(old) }

// fullErrnos are the errors of a write the disk or a limit refused.
var fullErrnos = []syscall.Errno{syscall.ENOSPC, syscall.EFBIG, syscall.EDQUOT}

// isFull reports whether err is a write refused for want of space: bbolt
// wraps some of these with %s, so their text is looked for too.
func isFull(err error) bool {
	for _, e := range fullErrnos {
		if errors.Is(err, e) || strings.Contains(err.Error(), e.Error()) {
			return true
		}
	}
	return false
}

// writeError maps the error of a write transaction: a full disk becomes
// STORAGE_FULL (counted, and logged once as it begins); a write that
// succeeds ends the streak.
func (db *DB) writeError(err error) error {
	if err == nil {
		if db.fault.inFull.Swap(false) {
			db.fault.logger.Info("the store accepts writes again", "file", db.path)
		}
		return nil
	}
	var ce *CorruptError
	if errors.As(err, &ce) || !isFull(err) {
		return err
	}
	db.fault.full.Add(1)
	if !db.fault.inFull.Swap(true) {
		db.fault.logger.Warn("STORAGE_FULL: a write failed for want of disk space and was not stored; free space on the store's disk",
			"code", incidentlib.ESTORAGEFULL, "file", db.path, "err", err.Error())
	}
	return &fullError{cause: err}
}

// fullError is a write refused for a full disk: STORAGE_FULL to a client,
// its cause in logs.
type fullError struct{ cause error }

func (e *fullError) Error() string { return "storage full: " + e.cause.Error() }
func (e *fullError) Unwrap() error { return e.cause }

func (e *fullError) As(target any) bool {
	if t, ok := target.(**incidentlib.Error); ok {
		*t = &incidentlib.Error{Code: incidentlib.ESTORAGEFULL,
			Message: "the server's disk is full: nothing was written; try again later"}
		return true
	}
	return false
}

// refuseWrite is the error of a write that is refused before its
// transaction: to a store known to be corrupt (nothing more is written
// into a damaged file), and, while the disk is full, when the file still
// cannot grow.
//
// A write that fails for want of space costs more than its transaction:
// bbolt rolls a failed commit back by rebuilding its free list, which it
// does (the store does not sync its free list) by walking every page of
// the file. The first write that meets the full disk pays it; while the
// store is in that state, each write first asks the file system for the
// room to grow by one allocation step (reserveRoom, which keeps it when it
// gets it), and is refused at once when there is none.
func (db *DB) refuseWrite() error {
	if ce := db.fault.corrupt.Load(); ce != nil {
		return ce
	}
	if db.fault.inFull.Load() {
		if err := reserveRoom(db.path, int64(db.bolt.AllocSize)); err != nil && isFull(err) {
			db.fault.full.Add(1)
			return &fullError{cause: err}
		}
	}
	return nil
}

// preflight checks the open, read-only b before bbolt walks its pages in a
// goroutine of its own: that the file holds the pages its meta page counts
// (a truncated file), and the structure of every reachable page, read from
// the file (walkFile).
func preflight(b *bolt.DB, path string, fileSize int64) (err error) {
	defer func() {
		if r := recover(); r != nil {
			ce, ok := corruption(r, path)
			if !ok {
				panic(r)
			}
			err = ce
		}
	}()
	defer faultGuard(debug.SetPanicOnFault(true))
	tx, err := b.Begin(false)
	if err != nil {
		return err
	}
	defer func() { _ = tx.Rollback() }()
	ps := int64(b.Info().PageSize)
	if size := tx.Size(); size > fileSize {
		return &CorruptError{Path: path, Page: fileSize / ps,
			Detail: fmt.Sprintf("the file is truncated: it is %d bytes, but its pages reach %d (%d pages of %d bytes)", fileSize, size, size/ps, ps)}
	}
	return walkFile(path, ps, fileSize)
}

// updateTx is bbolt's Update but for what follows a panic (a damaged page
// met in fn or in the commit): bbolt's Update then rolls the transaction
// back in the way that rebuilds the free list by walking every page of the
// file, in a goroutine of bbolt's (the store does not sync its free list),
// where the damaged page would end the process. Nothing of a transaction
// that panicked reached the meta page, so the rollback a caller makes
// (Tx.Rollback: the transaction's pending pages go back to the free list in
// memory) is enough; the panic then goes on to recoverFault.
func updateTx(b *bolt.DB, fn func(*bolt.Tx) error) error {
	tx, err := b.Begin(true)
	if err != nil {
		return err
	}
	ended := false
	defer func() {
		if !ended {
			_ = tx.Rollback()
		}
	}()
	if err := fn(tx); err != nil {
		ended = true
		_ = tx.Rollback()
		return err
	}
	err = tx.Commit()
	ended = true
	return err
}

// Group commit. A write that finds no transaction of the store's writes
// running starts one at once, alone (a lone writer waits for nothing);
// the writes that come while it runs queue, and when it ends they run
// together in the next transaction (at most bbolt's MaxBatchSize each),
// one commit and one fsync for all, and so on while writes come. No
// write waits for a timer: bbolt's Batch waits MaxBatchDelay (10 ms) for
// a batch to fill, which made eight concurrent writers slower than one.
// A batch runs as bbolt's Batch runs one (a call that fails is taken out
// and runs again alone, on its caller's goroutine), in a goroutine of its
// own, with its transaction run by updateGuarded, so that a panic of a
// damaged page (a sibling read while the commit rebalances, a page of the
// free list) becomes a *CorruptError for every write of the batch, as in
// any other transaction.

// errTrySolo tells a call of a failed batch to run alone.
var errTrySolo = errors.New("batch function returned an error and should be re-run solo")

type batchCall struct {
	fn  func(*bolt.Tx) error
	err chan error
}

type writeBatch struct {
	db    *DB
	calls []batchCall
}

// batcher is the writes' group commit: whether a transaction of theirs
// runs, and the writes queued for the next.
type batcher struct {
	mu      sync.Mutex
	running bool
	queue   []batchCall
}

// groupCommit runs fn in a write transaction that concurrent calls may
// share: fn may run more than once, and its error is returned to its
// caller alone.
func (db *DB) groupCommit(fn func(*bolt.Tx) error) error {
	bs := &db.fault.batches
	bs.mu.Lock()
	if !bs.running {
		// Nothing runs, so nothing is queued: fn runs alone, at once, on
		// its caller's goroutine (a refusal names its method, cluster.go).
		bs.running = true
		bs.mu.Unlock()
		defer db.nextBatch() // even if fn panics: the writes queued meanwhile run
		return db.updateGuarded(fn)
	}
	errCh := make(chan error, 1)
	bs.queue = append(bs.queue, batchCall{fn: fn, err: errCh})
	bs.mu.Unlock()
	err := <-errCh
	if err == errTrySolo {
		err = db.updateGuarded(fn)
	}
	return err
}

// nextBatch starts the writes queued meanwhile as one batch, in a
// goroutine of its own that starts the next when it ends, or notes that
// none runs.
func (db *DB) nextBatch() {
	bs := &db.fault.batches
	bs.mu.Lock()
	if len(bs.queue) == 0 {
		bs.running = false
		bs.mu.Unlock()
		return
	}
	n := min(len(bs.queue), max(db.bolt.MaxBatchSize, 1))
	b := &writeBatch{db: db, calls: slices.Clone(bs.queue[:n])}
	bs.queue = append(bs.queue[:0], bs.queue[n:]...)
	bs.mu.Unlock()
	go func() {
		b.run()
		db.nextBatch()
	}()
}

// run runs the batch's calls in one transaction; a call that fails is
// taken out and told to run alone, and the others run again.
func (b *writeBatch) run() {
	db := b.db
	for len(b.calls) > 0 {
		failed := -1
		err := db.updateGuarded(func(tx *bolt.Tx) error {
			for i, c := range b.calls {
				if err := safelyCall(c.fn, tx); err != nil {
					failed = i
					return err
				}
			}
			return nil
		})
		if failed >= 0 {
			c := b.calls[failed]
			b.calls[failed], b.calls = b.calls[len(b.calls)-1], b.calls[:len(b.calls)-1]
			c.err <- errTrySolo
			continue
		}
		for _, c := range b.calls {
			c.err <- err
		}
		return
	}
}

// safelyCall runs fn, turning a panic into an error: the call then runs
// alone, on its caller's goroutine, where the panic is its own.
func safelyCall(fn func(*bolt.Tx) error, tx *bolt.Tx) (err error) {
	defer func() {
		if p := recover(); p != nil {
			err = fmt.Errorf("panic in a batched write: %v", p)
		}
	}()
	return fn(tx)
}
