package cluster

import (
	"encoding/json"
	"strconv"
	"time"

	"github.com/nats-io/nats.go"

	"github.com/incidentlib/incidentlib"
	"github.com/incidentlib/incidentlib/iljson"
)

// The versions a message carries (headers HeaderFormat and HeaderRules).
// FormatVersion is the layout of Write; RulesVersion the newest rule set
// this node applies writes by (validation, stamping, the meaning of each
// Op). A message carries the rule set its Op needs (rulesOf): the
// incident writes need rule set 1, the admin writes (tokens, taxonomy,
// organizations) rule set 2, the imports of a history rule set 3, the
// glossary's writes rule set 4, so a node of rule set 1 keeps applying the
// incident writes of an upgraded node and stops at its first admin write.
// A node that meets a version above its own stops applying
// (Applier.Stopped) instead of refusing the write, so that a rolling
// upgrade never makes nodes diverge (docs/cluster.md, "Upgrades").
const (
	FormatVersion = 1
	RulesVersion  = 4
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

	// The admin writes (rule set 2), on SubjectLibrary: a token made
	// (only its hash is in the message) or revoked, a term added, changed,
	// given aliases or deprecated, an organization added, renamed or
	// merged into another.
	OpTokenCreate   Op = "token_create"
	OpTokenRevoke   Op = "token_revoke"
	OpTermAdd       Op = "term_add"
	OpTermUpdate    Op = "term_update"
	OpTermAliases   Op = "term_aliases"
	OpTermDeprecate Op = "term_deprecate"
	OpOrgAdd        Op = "org_add"
	OpOrgRename     Op = "org_rename"
	OpOrgMerge      Op = "org_merge"

	// The imports of incidents with their history (rule set 3), on
	// SubjectLibrary: the lines of export --history, written as given
	// by every node's store (incidentlib.HistoryImporter). OpHistoryChunk
	// carries part of the lines of an import too large for one message;
	// applying it writes nothing. OpHistoryCommit names the chunks' log
	// positions and imports their bytes, joined, in one transaction.
	OpHistoryImport Op = "history_import"
	OpHistoryChunk  Op = "history_chunk"
	OpHistoryCommit Op = "history_commit"

	// The glossary's writes (rule set 4), on SubjectLibrary: an entry
	// added, changed (GlossaryKey names it, Glossary is what it becomes)
	// or removed.
	OpGlossaryAdd    Op = "glossary_add"
	OpGlossaryUpdate Op = "glossary_update"
	OpGlossaryRemove Op = "glossary_remove"
)

// rulesOf returns the rule set a write of op needs: 4 for the glossary's,
// 3 for the imports of a history, 2 for the other admin writes, 1 for the
// others.
func rulesOf(op Op) int {
	switch op {
	case OpGlossaryAdd, OpGlossaryUpdate, OpGlossaryRemove:
		return 4
	case OpHistoryImport, OpHistoryChunk, OpHistoryCommit:
		return 3
	case OpTokenCreate, OpTokenRevoke, OpTermAdd, OpTermUpdate, OpTermAliases, OpTermDeprecate, OpOrgAdd, OpOrgRename, OpOrgMerge:
		return 2
	}
	return 1
}

// header is the headers of a message of op: the format and the rule set
// it needs.
func header(op Op) nats.Header {
	return nats.Header{HeaderFormat: {strconv.Itoa(FormatVersion)}, HeaderRules: {strconv.Itoa(rulesOf(op))}}
}

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

	// The admin writes. Name is a token's name (token_*) or an
	// organization's new name (org_rename); TokenRole, TokenHash (the
	// SHA-256 of the secret: the secret itself never enters the log) and
	// Expires a new token's.
	Name      string    `json:"name,omitempty"`
	TokenRole string    `json:"token_role,omitempty"`
	TokenHash []byte    `json:"token_sha256,omitempty"`
	Expires   time.Time `json:"expires,omitzero"`
	// Term is the term added; Kind and Slug the term changed (Slug also
	// the organization renamed); TermUpdate, Aliases and Deprecated the
	// change.
	Term       *incidentlib.Term       `json:"term,omitempty"`
	Kind       incidentlib.TermKind    `json:"kind,omitempty"`
	Slug       string                  `json:"slug,omitempty"`
	TermUpdate *incidentlib.TermUpdate `json:"term_update,omitempty"`
	Aliases    []string                `json:"aliases,omitempty"`
	Deprecated bool                    `json:"deprecated,omitempty"`
	// Organization is the organization added; From and Into a merge's.
	Organization *incidentlib.Organization `json:"organization,omitempty"`
	From         string                    `json:"from,omitempty"`
	Into         string                    `json:"into,omitempty"`
	// Glossary is the glossary entry added or changed, GlossaryKey the
	// key of the entry changed or removed.
	Glossary    *incidentlib.GlossaryEntry `json:"glossary,omitempty"`
	GlossaryKey string                     `json:"glossary_key,omitempty"`

	// History is the lines of a history import (history_import), or a
	// part of them (history_chunk), as the client sent them.
	History []byte `json:"history,omitempty"`
}

func (w *Write) encode() ([]byte, error) { return json.Marshal(w) }

// writeMembers are the JSON members of Write.
var writeMembers = iljson.KnownFields(Write{})

// decodeWrite reads a message into w, as json.Unmarshal does, in one pass
// where the codec can (iljson.Unmarshal; encoding/json otherwise):
// encoding/json checks the whole message, then skips the record to hand
// it to its own decoder, which reads it again. Every node reads every
// message, so this is paid three times per write
// (TestDecodeWriteAsEncodingJSON compares the two).
func decodeWrite(data []byte, w *Write) error {
	return iljson.Unmarshal(data, w, writeMembers, iljson.NullIsZero, func(w Write, _ iljson.Extra) Write { return w })
}

// identity is the author the write carries, for the store.
func (w *Write) identity() incidentlib.Identity {
	role, err := incidentlib.ParseRole(w.Role)
	if err != nil {
		role = incidentlib.RoleEditor
	}
	return incidentlib.Identity{Name: w.Author, Role: role}
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
