package cluster

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"encoding/json"
	"time"

	"github.com/incidentlib/incidentlib"
)

// The versions a message carries (headers HeaderFormat and HeaderRules).
// FormatVersion is the layout of Write; RulesVersion the rules a write is
// applied by (validation, stamping, the meaning of each Op). A node that
// meets a version above its own stops applying (Applier.Newer) instead of
// refusing the write, so that a rolling upgrade never makes nodes diverge:
// upgrade every node before any node writes with the new version
// (docs/cluster.md).
const (
	FormatVersion = 1
	RulesVersion  = 1
	HeaderFormat  = "Incidentlib-Format"
	HeaderRules   = "Incidentlib-Rules"
)

// Op is what a write does.
type Op string

// The writes of the log.
const (
	OpUpsert   Op = "upsert"
	OpDelete   Op = "delete"
	OpRestore  Op = "restore"
	OpSubmit   Op = "submit"
	OpDecide   Op = "decide"
	OpWithdraw Op = "withdraw"
	OpPurge    Op = "purge"
	OpImport   Op = "import"
	// OpImportChunk carries part of an import too large for one message;
	// applying it writes nothing. OpImportCommit names the chunks' log
	// positions and applies them all in one transaction, or none.
	OpImportChunk  Op = "import_chunk"
	OpImportCommit Op = "import_commit"
)

// Write is one message of the log: a write of the library as the node that
// received it validated and stamped it. Applying it on any node gives the
// same bytes: the time and the author are in the message, never read from
// the applying node.
type Write struct {
	Op Op `json:"op"`
	// ID is the incident written (upsert, delete, review).
	ID string `json:"id,omitempty"`
	// At is the time the receiving node stamped: max(its clock, the
	// incident's previous updated_at + 1µs).
	At time.Time `json:"at"`
	// Author and Role are who the receiving node authenticated.
	Author string `json:"author,omitempty"`
	Role   string `json:"role,omitempty"`
	// Record is the incident of an upsert (IL-JSON); Records an import's.
	Record  *incidentlib.Incident   `json:"record,omitempty"`
	Records []*incidentlib.Incident `json:"records,omitempty"`
	// ExpectedUpdatedAt is the write's optimistic concurrency condition.
	ExpectedUpdatedAt *string `json:"expected_updated_at,omitempty"`
	// ExpectedVersion is the write's condition on the incident's version.
	ExpectedVersion *int `json:"expected_version,omitempty"`
	// Version is the version restored or purged; Decision a review's;
	// Comment the comment of a restore or review, the reason of a
	// withdrawal or purge.
	Version  int                        `json:"version,omitempty"`
	Decision incidentlib.ReviewDecision `json:"decision,omitempty"`
	Comment  string                     `json:"comment,omitempty"`
	// Import options.
	KeepUpdatedAt bool              `json:"keep_updated_at,omitempty"`
	OnlyIfNew     bool              `json:"only_if_new,omitempty"`
	Merges        map[string]string `json:"merges,omitempty"`
	// Chunks are the log positions of an import's chunks (OpImportCommit).
	Chunks []uint64 `json:"chunks,omitempty"`
}

func (w *Write) encode() ([]byte, error) { return json.Marshal(w) }

// identity is the author the write carries, for the store.
func (w *Write) identity() incidentlib.Identity {
	role, err := incidentlib.ParseRole(w.Role)
	if err != nil {
		role = incidentlib.RoleEditor
	}
	return incidentlib.Identity{Name: w.Author, Role: role}
}

type idempotencyKey struct{}

// WithIdempotencyKey carries the client's idempotency key of a request's
// write (the Idempotency-Key header): retries of the request with the
// same key apply at most once (within the stream's dedupe window).
func WithIdempotencyKey(ctx context.Context, key string) context.Context {
	return context.WithValue(ctx, idempotencyKey{}, key)
}

// idempotencyKeyOf returns the request's key, or a new random one.
func idempotencyKeyOf(ctx context.Context, op Op, id string) string {
	if k, ok := ctx.Value(idempotencyKey{}).(string); ok && k != "" {
		// One request writes once; the key names the write within it.
		return "c:" + k + ":" + string(op) + ":" + id
	}
	var b [16]byte
	_, _ = rand.Read(b[:])
	return "n:" + hex.EncodeToString(b[:])
}

// ValidIdempotencyKey reports why a client's key is refused, or "".
func ValidIdempotencyKey(k string) string {
	if len(k) == 0 || len(k) > 128 {
		return "the Idempotency-Key header must be 1 to 128 characters"
	}
	for i := range len(k) {
		if c := k[i]; c < 0x21 || c > 0x7e {
			return "the Idempotency-Key header must be printable ASCII without spaces"
		}
	}
	return ""
}
