package incidentlib

import (
	"context"
	"io"
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
