package incidentlib

import "fmt"

// DefaultMaxRecordBytes is the default size limit of one record, measured
// as its IL-JSON as received (or, for a record built in memory, its
// canonical IL-JSON): 256 KiB. The same limit applies on every path a
// record enters by (writes, imports, the change feed a replica reads, an
// upstream library), set by --max-record.
const DefaultMaxRecordBytes = 256 << 10

// CheckRecordSize returns EINVALID, naming the record id when it is known
// (id may be empty), if a record of n bytes is over max bytes; nil
// otherwise. max <= 0 means DefaultMaxRecordBytes.
func CheckRecordSize(id string, n, max int) error {
	if max <= 0 {
		max = DefaultMaxRecordBytes
	}
	if n <= max {
		return nil
	}
	what := "the record"
	if id != "" {
		what = "record " + id
	}
	return &Error{Code: EINVALID, Message: fmt.Sprintf("%s is %d bytes, over the limit of %d bytes (--max-record)", what, n, max)}
}
