package incidentlib

import "github.com/incidentlib/incidentlib/iljson"

// A source's link check (incidentlib linkcheck) is kept among its extra
// fields of IL-JSON; the codec reads and writes them (iljson/sourcecheck.go).
const (
	SourceStatusField     = iljson.SourceStatusField
	SourceCheckedAtField  = iljson.SourceCheckedAtField
	SourceFinalURLField   = iljson.SourceFinalURLField
	SourceCheckErrorField = iljson.SourceCheckErrorField
)

// SourceCheck is the result of checking one source URL.
type SourceCheck = iljson.SourceCheck

// Check returns the source's last link check, and false if it was never
// checked (or the recorded fields do not read as a check).
func (s Source) Check() (SourceCheck, bool) { return iljson.ReadCheck(s.Extra) }

// WithCheck returns a copy of s that records c. s itself is not changed
// (records may be shared with the store's cache).
func (s Source) WithCheck(c SourceCheck) Source { s.Extra = iljson.WithCheck(s.Extra, c); return s }
