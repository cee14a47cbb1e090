package incidentlib

import (
	"context"
	"io"

	"github.com/RoaringBitmap/roaring/v2"
)

// The capabilities of the store that consumers other than the GraphQL
// resolvers use. Each is named for what it does; one of storage's rooms
// implements each (storage.Incidents, storage.Maintenance), and each
// consumer (search, replica, linkcheck, the HTTP edge) takes only the ones
// it needs, never the concrete store.

// Change is one entry of the change log: the latest change of one
// incident, with the record after it. It is the one change type of the
// library: the store's log, the change feed (GET /api/v1/changes, read and
// written by changefeed/), replicas and the search index all use it.
type Change struct {
	// Seq is the store sequence of the write that made the change; on a
	// replica, the primary's sequence.
	Seq uint64
	// ID is the incident's id.
	ID string
	// Deleted marks a tombstone: the incident was deleted at Seq.
	Deleted bool
	// Incident is the decoded record, nil for a tombstone or when the
	// change was read raw. A record read from the store is shared with its
	// record cache: callers must not change it.
	Incident *Incident
	// Record is the record's canonical IL-JSON as stored (the caller's own
	// copy) when the change was read raw, else nil.
	Record []byte
	// Action is what the change did, in the history's vocabulary; empty
	// where the store cannot tell (read it with ActionOf).
	Action ChangeAction
	// Version is the incident's version after the change (counted from 1
	// per incident), 0 where the store keeps no versions.
	Version int
	// Entry is the version's history entry (author, comment, changed
	// fields; its Record is nil: the record is Record or Incident) on the
	// history feed (HistoryLog), nil on the feed of current records.
	Entry *IncidentVersion
	// Skipped is set by a reader of another library's feed (a replica)
	// that skipped the change's record for this rule (SkipRule): the
	// change carries no record and applying it only moves the position
	// past it.
	Skipped Rule
}

// ChangeAction is what a change did to an incident: the vocabulary of the
// history, of the change feed and of subscriptions.
type ChangeAction string

// The change actions.
const (
	ActionCreate         ChangeAction = "CREATE"
	ActionUpdate         ChangeAction = "UPDATE"
	ActionDelete         ChangeAction = "DELETE"
	ActionRestore        ChangeAction = "RESTORE"
	ActionImport         ChangeAction = "IMPORT"
	ActionMerge          ChangeAction = "MERGE"
	ActionSubmit         ChangeAction = "SUBMIT"
	ActionApprove        ChangeAction = "APPROVE"
	ActionRequestChanges ChangeAction = "REQUEST_CHANGES"
	ActionDispute        ChangeAction = "DISPUTE"
	ActionWithdraw       ChangeAction = "WITHDRAW"
	ActionPurge          ChangeAction = "PURGE"
)

// ActionOf is a change's action: its own, else DELETE for a tombstone,
// CREATE for a first version and UPDATE otherwise.
func ActionOf(c Change) ChangeAction {
	switch {
	case c.Action != "":
		return c.Action
	case c.Deleted:
		return ActionDelete
	case c.Version == 1:
		return ActionCreate
	}
	return ActionUpdate
}

// ChangeLog is the ordered log of the store's writes. The log keeps one
// entry per incident (its latest change, tombstones included), so applying
// the changes since a sequence in order brings any copy that had applied
// everything up to that sequence level with the store.
type ChangeLog interface {
	// Seq returns the sequence of the latest committed write. It takes no
	// transaction.
	Seq() uint64

	// SeqAbove returns a channel that is closed once Seq is above seq: at
	// once if it already is, else at the first commit that raises it.
	SeqAbove(seq uint64) <-chan struct{}

	// ChangesSince returns, oldest first, up to limit changes with a
	// sequence above seq, with decoded records, read in one transaction.
	// Fewer than limit changes means none were left at the time of the
	// read. Returns EINVALID if limit is not positive.
	ChangesSince(ctx context.Context, seq uint64, limit int) ([]Change, error)

	// RawChangesSince is ChangesSince with each record's stored bytes
	// (Change.Record) instead of the decoded record, read in a transaction
	// of its own and never from a read snapshot.
	RawChangesSince(ctx context.Context, seq uint64, limit int) ([]Change, error)
}

// ChangeApplier applies another library's change log to this store (a
// read replica following its primary).
type ChangeApplier interface {
	// AppliedSeq returns the other library's sequence up to which this
	// store has applied its changes, and whether it applied any at all.
	AppliedSeq(ctx context.Context) (seq uint64, following bool, err error)

	// ApplyChanges applies one page of changes, oldest first, together
	// with the position reached (the last change's Seq) in one
	// transaction. from must be the stored position (0 for a store that
	// never applied one), else ECONFLICT and nothing is written; sequences
	// must increase and exceed from, and records must pass
	// ValidateIncoming but for RuleText (EINVALID naming the change). A
	// change the reader Skipped writes nothing but the position, which
	// passes it. Returns the new position.
	ApplyChanges(ctx context.Context, from uint64, changes []Change) (uint64, error)
}

// IncidentSets gives sets of incidents as roaring bitmaps of incident
// numbers (ParseID), for callers that combine the store's filters with
// sets of their own, such as the search index.
type IncidentSets interface {
	// MatchSet returns the numbers of the incidents that match f, exactly
	// as FindIncidents selects them. The bitmap is the caller's own.
	// Returns EINVALID for a bad filter.
	MatchSet(ctx context.Context, f IncidentFilter) (*roaring.Bitmap, error)

	// FacetsOf counts the terms of the given kinds (all kinds when kinds
	// is empty) among the incidents of set that are in the store, as
	// IncidentService.Facets does. Returns EINVALID for an unknown kind.
	FacetsOf(ctx context.Context, set *roaring.Bitmap, kinds []TermKind) ([]Facet, error)

	// YearsOf counts the incidents of set per year, oldest first, as
	// IncidentService.Years does.
	YearsOf(ctx context.Context, set *roaring.Bitmap) ([]YearCount, error)
}

// StoredRecord is a stored incident as a reader that needs only part of it
// gets it: the decoded record when the store has it decoded at hand
// (shared: read only), otherwise a copy of its stored IL-JSON. Both are
// empty when there is no such incident.
type StoredRecord struct {
	Decoded *Incident
	Raw     []byte
}

// RecordReader reads stored records by incident number.
type RecordReader interface {
	// RecordsByNumber returns the incidents nums in their order, read in
	// one transaction.
	RecordsByNumber(ctx context.Context, nums []uint32) ([]StoredRecord, error)
}

// SourceCheckStore keeps the results of link checks on the incidents'
// sources (sourcecheck.go).
type SourceCheckStore interface {
	// SourceURLs returns every source URL of the library with the ids of
	// the incidents that cite it (in id order), read in one transaction.
	SourceURLs(ctx context.Context) (map[string][]string, error)

	// RecordSourceChecks records check results, by URL, on the sources of
	// the incidents ids that still cite a checked URL, in one write that
	// reads each record afresh; updated_at is not stamped. Unknown ids are
	// skipped. Returns how many incidents were written.
	RecordSourceChecks(ctx context.Context, ids []string, checks map[string]SourceCheck) (int, error)
}

// StoreStats are the figures of the store exported as metrics.
type StoreStats struct {
	// Read transactions started since open, and open now.
	ReadTxTotal, OpenReadTx int
	// Pages on the freelist, pages freed but still held by open read
	// transactions, bytes allocated in free pages, bytes the freelist
	// takes in use.
	FreePages, PendingPages, FreeAllocBytes, FreelistBytes int
	// FileBytes is the size of the database file; PageBytes its page size.
	FileBytes int64
	PageBytes int
	// Seq is the store's sequence.
	Seq uint64
	// WritesInFlight is how many writes are waiting for or inside a commit.
	WritesInFlight int
	// Corrupt is set once a transaction met a damaged page
	// (STORE_CORRUPT): /readyz answers 503 from then on.
	Corrupt bool
	// FullErrors counts the writes refused for a full disk (STORAGE_FULL).
	FullErrors uint64
}

// StoreMonitor reports the store's figures without waiting on it:
// monitoring must not depend on the thing that failed (seed 000).
type StoreMonitor interface {
	// StoreStats takes no transaction and never waits on writers.
	StoreStats() StoreStats
}

// Backuper writes consistent copies of the store.
type Backuper interface {
	// Backup writes a consistent copy of the whole store to w in one read
	// transaction (writers go on meanwhile) and returns its size. After a
	// purge the copy holds no free page of the store's file, where the
	// purged content may remain (docs/editing.md, "Purge").
	Backup(ctx context.Context, w io.Writer) (int64, error)
}
