package incidentlib

import (
	"context"
	"encoding/json"
	"io"
)

// The history of incidents: every change to an incident is a version kept
// until an administrator compacts history explicitly. docs/editing.md
// describes the workflow.

// ReviewState is where an incident stands in the review workflow.
type ReviewState string

// The review states. An edit returns an incident to DRAFT;
// submitForReview moves DRAFT to IN_REVIEW; a reviewer's APPROVE
// (IN_REVIEW to REVIEWED), REQUEST_CHANGES (to DRAFT) and DISPUTE (to
// DISPUTED) need IN_REVIEW; WITHDRAW is allowed from any state.
const (
	ReviewDraft     ReviewState = "DRAFT"
	ReviewInReview  ReviewState = "IN_REVIEW"
	ReviewReviewed  ReviewState = "REVIEWED"
	ReviewDisputed  ReviewState = "DISPUTED"
	ReviewWithdrawn ReviewState = "WITHDRAWN"
)

// ReviewStates lists the review states in the order of the workflow.
var ReviewStates = []ReviewState{ReviewDraft, ReviewInReview, ReviewReviewed, ReviewDisputed, ReviewWithdrawn}

// IsValid reports whether s is a known review state.
func (s ReviewState) IsValid() bool {
	switch s {
	case ReviewDraft, ReviewInReview, ReviewReviewed, ReviewDisputed, ReviewWithdrawn:
		return true
	}
	return false
}

// State is the incident's review state: review_state when the record has
// one, else (a record written before the workflow) REVIEWED when
// review.reviewed_at is set and DRAFT otherwise.
func (i *Incident) State() ReviewState {
	if i.ReviewState != "" {
		return i.ReviewState
	}
	if i.Review.ReviewedAt != "" {
		return ReviewReviewed
	}
	return ReviewDraft
}

// CurrentVersion is the incident's version: its version member, 1 for a
// record written before versions (which the store upgraded as version 1).
func (i *Incident) CurrentVersion() int {
	if i.Version < 1 {
		return 1
	}
	return i.Version
}

// ReviewDecision is a reviewer's decision on an incident in review.
type ReviewDecision string

// The review decisions.
const (
	DecisionApprove        ReviewDecision = "APPROVE"
	DecisionRequestChanges ReviewDecision = "REQUEST_CHANGES"
	DecisionDispute        ReviewDecision = "DISPUTE"
)

// Action is the history action of the decision.
func (d ReviewDecision) Action() ChangeAction {
	switch d {
	case DecisionApprove:
		return ActionApprove
	case DecisionRequestChanges:
		return ActionRequestChanges
	case DecisionDispute:
		return ActionDispute
	}
	return ""
}

// IncidentVersion is one version of an incident: one entry of its history.
type IncidentVersion struct {
	ID      string
	Version int
	// At is when the version was written (RFC 3339).
	At string
	// Author is the name of the token that wrote it, or the program's own
	// name for its writes: admin, import, migration, seeds.
	Author string
	// AuthorRole is the author's role (reader, editor, reviewer, admin),
	// "" where unknown.
	AuthorRole string
	Action     ChangeAction
	// ChangedFields are the IL-JSON paths (title.en, related) the version
	// changed from the one before; empty for a first version, a delete and
	// review actions.
	ChangedFields []string
	// Comment is the comment of a restore or a review, the reason of a
	// withdrawal or a purge.
	Comment string
	// Record is the whole IL-JSON of the version, nil for a delete (a
	// tombstone) and for a version whose content was purged or compacted.
	Record json.RawMessage
	// Deleted marks the tombstone of a delete.
	Deleted bool
	// Target is the version whose content a PURGE removed.
	Target int
	// Purged are the versions whose content a PURGE removed, oldest
	// first: Target and every other version with the same content (the
	// record but for version, updated_at, review_state and the review's
	// reviewed_at and reviewed_by), such as the SUBMIT and review
	// decisions that carried it.
	Purged []int
}

// VersionPage is one page of an incident's history, newest first.
type VersionPage struct {
	Versions    []*IncidentVersion
	HasNextPage bool
	TotalCount  int
}

// HistoryService reads the history of incidents.
type HistoryService interface {
	// History returns up to first versions of the incident id, newest
	// first, older than version after (0: from the newest). A deleted
	// incident keeps its history. Returns ENOTFOUND if the id has no
	// history, EINVALID for a malformed id or a page size out of range.
	History(ctx context.Context, id string, first, after int) (*VersionPage, error)

	// IncidentVersion returns version of the incident id, nil if there is
	// no such version. Returns EINVALID for a malformed id.
	IncidentVersion(ctx context.Context, id string, version int) (*IncidentVersion, error)

	// DeletedIncident returns the last record of the deleted incident id
	// and its tombstone's version entry, nil if id is not deleted.
	DeletedIncident(ctx context.Context, id string) (*Incident, *IncidentVersion, error)
}

// HistoryWriter writes the history's own actions. Each writes one
// version in one transaction, with the author taken from ctx
// (IdentityFrom); opts.ExpectedVersion and opts.ExpectedUpdatedAt check
// optimistic concurrency (ECONFLICT).
type HistoryWriter interface {
	// RestoreIncident writes a new version of id equal to its version
	// (updated_at stamped, review state DRAFT). A deleted incident is
	// restored too, with the links its delete removed. Returns ENOTFOUND
	// if the version does not exist or its content was purged, EINVALID if
	// it no longer passes validation (a link to an incident gone since).
	RestoreIncident(ctx context.Context, id string, version int, comment string, opts WriteOptions) (*Incident, error)

	// SubmitForReview moves id from DRAFT to IN_REVIEW. Returns
	// EINVALIDSTATE from any other state.
	SubmitForReview(ctx context.Context, id string, opts WriteOptions) (*Incident, error)

	// DecideReview records a reviewer's decision on id, which must be
	// IN_REVIEW (else EINVALIDSTATE). APPROVE is refused with ESELFREVIEW
	// when the reviewer wrote a version since the last approval, unless
	// the store allows self-review.
	DecideReview(ctx context.Context, id string, decision ReviewDecision, comment string, opts WriteOptions) (*Incident, error)

	// WithdrawIncident moves id to WITHDRAWN from any state, with reason.
	// Returns EINVALIDSTATE if it already is withdrawn.
	WithdrawIncident(ctx context.Context, id, reason string, opts WriteOptions) (*Incident, error)

	// PurgeVersion removes the content of one superseded or deleted
	// version of id (a takedown), and of every other version with the
	// same content (IncidentVersion.Purged), and adds a PURGE entry with
	// reason, which it returns. A version with no content left (purged
	// before, a delete) is answered with the PURGE entry that removed it
	// (a delete's own entry) and nothing is written. Returns ENOTFOUND if
	// there is no such version, EINVALID for the current version or a
	// version whose content is the live content (write a version without
	// it, or delete the incident, first).
	PurgeVersion(ctx context.Context, id string, version int, reason string) (*IncidentVersion, error)
}

// HistoryLog is the change log with every version: what a replica needs
// to hold the same history as its primary.
type HistoryLog interface {
	// VersionsSince returns, oldest first, up to limit changes with a
	// sequence above seq, one per version written (Change.Version,
	// Change.Action, Change.Entry with its author and comment). Returns
	// ESEQUENCECOMPACTED when history compaction removed versions after
	// seq, EINVALID for a limit that is not positive.
	VersionsSince(ctx context.Context, seq uint64, limit int) ([]Change, error)
}

// Author names of the program's own writes.
const (
	AuthorImport    = "import"
	AuthorMigration = "migration"
	AuthorSeeds     = "seeds"
)

// UnmarshalGQL reads the GraphQL enum.
func (s *ReviewState) UnmarshalGQL(x any) error {
	return UnmarshalEnum(s, x, "ReviewState", ReviewState.IsValid)
}

// MarshalGQL writes the GraphQL enum.
func (s ReviewState) MarshalGQL(w io.Writer) { WriteEnum(w, string(s)) }

// IsValid reports whether d is a known decision.
func (d ReviewDecision) IsValid() bool { return d.Action() != "" }

// UnmarshalGQL reads the GraphQL enum.
func (d *ReviewDecision) UnmarshalGQL(x any) error {
	return UnmarshalEnum(d, x, "ReviewDecision", ReviewDecision.IsValid)
}

// MarshalGQL writes the GraphQL enum.
func (d ReviewDecision) MarshalGQL(w io.Writer) { WriteEnum(w, string(d)) }

// IsValid reports whether a is a known action.
func (a ChangeAction) IsValid() bool {
	switch a {
	case ActionCreate, ActionUpdate, ActionDelete, ActionRestore, ActionImport, ActionMerge, ActionSubmit,
		ActionApprove, ActionRequestChanges, ActionDispute, ActionWithdraw, ActionPurge:
		return true
	}
	return false
}

// UnmarshalGQL reads the GraphQL enum.
func (a *ChangeAction) UnmarshalGQL(x any) error {
	return UnmarshalEnum(a, x, "HistoryAction", ChangeAction.IsValid)
}

// MarshalGQL writes the GraphQL enum.
func (a ChangeAction) MarshalGQL(w io.Writer) { WriteEnum(w, string(a)) }
