package incidentlib

import (
	"context"
	"fmt"
	"io"
	"unicode/utf8"
)

// HistoryImporter writes incidents with their history as given, adding no
// version: the lines of export --history (docs/importing.md). It is an
// administrator's operation: the API lets only an admin token reach it.
type HistoryImporter interface {
	// ImportHistory reads a history export and writes every version as
	// given, all in one transaction or none. Returns ECONFLICT (naming the
	// id) if the store holds a history or a record of an id of the file,
	// EINVALID for a malformed line, a version whose record fails
	// ValidateIncoming (deprecated terms are accepted) or a link to an
	// incident the store will not hold. Returns how many incidents it
	// wrote.
	ImportHistory(ctx context.Context, r io.Reader) (int, error)
}

// The history grammar (docs/importing.md): the rules every incident's
// history follows, as the store writes it. storage.validateHistory (storage/historygrammar.go) holds them;
// history import refuses a line that breaks one, and check reports a
// stored history that does.

// HistoryRoles are the author roles a version may name: Role's names,
// and "" where unknown.
var HistoryRoles = []string{"", RoleReader.String(), RoleEditor.String(), RoleReviewer.String(), RoleAdmin.String()}

// ValidAuthor says why name cannot be the author of a version, or "":
// 1 to MaxTokenNameLen bytes of UTF-8 with no control character
// (IsControl).
func ValidAuthor(name string) string {
	if name == "" {
		return "no author"
	}
	if len(name) > MaxTokenNameLen {
		return fmt.Sprintf("an author of %d bytes, more than the limit of %d", len(name), MaxTokenNameLen)
	}
	if !utf8.ValidString(name) {
		return "an author that is not UTF-8"
	}
	for _, r := range name {
		if IsControl(r) {
			return fmt.Sprintf("an author with the control character U+%04X", r)
		}
	}
	return ""
}

// HistoryAllowances are what a history may do beyond the grammar's
// strictest form, as an export line says of it (storage.historyAllowancesOf) and a
// store allows (its compactions, the logs it followed).
type HistoryAllowances struct {
	// Gaps: versions may be missing, the first one too (history compact
	// removed them, or the store followed a log that keeps only each
	// incident's latest change); they still increase.
	Gaps bool `json:"gaps,omitempty"`
	// Unordered: a version's time may be before the one before it (the
	// versions were stamped by more than one clock: a cluster's nodes).
	Unordered bool `json:"unordered,omitempty"`
}
