package iljson

import (
	"encoding/json"
	"maps"
	"strconv"
)

// The link checker (incidentlib linkcheck) records on each source what it
// last found at the URL. The four fields are kept among the source's
// extra fields of IL-JSON, so that records without them, and programs that
// do not know them, round-trip byte for byte:
//
//	{"url": "...", "kind": "blog", "archived": null,
//	 "checked_at": "2026-11-30T12:00:00Z", "final_url": "https://...", "status": 200}
//
// status is the HTTP status of the final response after redirects, or 0
// when no response came (connection refused, reset, DNS failure, timeout,
// or an address the checker refuses to reach); check_error then says why,
// in a few words from a fixed list ("timeout", "refused: loopback
// address", ...; linkcheck.Reason), and final_url is absent.
const (
	SourceStatusField     = "status"
	SourceCheckedAtField  = "checked_at"
	SourceFinalURLField   = "final_url"
	SourceCheckErrorField = "check_error"
)

// SourceCheck is the result of checking one source URL.
type SourceCheck struct {
	// Status is the HTTP status of the final response, 0 for no response.
	Status int
	// CheckedAt is when the check was made, RFC 3339 in UTC.
	CheckedAt string
	// FinalURL is the URL after redirects.
	FinalURL string
	// Error says why no response came (Status 0); empty otherwise.
	Error string
}

// ReadCheck returns the last link check recorded in a source's extra
// fields ex, and false if it was never
// checked (or the recorded fields do not read as a check).
func ReadCheck(ex Extra) (SourceCheck, bool) {
	raw, ok := ex[SourceCheckedAtField]
	if !ok {
		return SourceCheck{}, false
	}
	var c SourceCheck
	if json.Unmarshal(raw, &c.CheckedAt) != nil || c.CheckedAt == "" {
		return SourceCheck{}, false
	}
	if v, ok := ex[SourceStatusField]; ok {
		n, err := strconv.Atoi(string(v))
		if err != nil {
			return SourceCheck{}, false
		}
		c.Status = n
	}
	if v, ok := ex[SourceFinalURLField]; ok {
		_ = json.Unmarshal(v, &c.FinalURL)
	}
	if v, ok := ex[SourceCheckErrorField]; ok {
		_ = json.Unmarshal(v, &c.Error)
	}
	return c, true
}

// WithCheck returns a copy of ex that records c. ex itself is not changed
// (records may be shared with the store's cache).
func WithCheck(ex Extra, c SourceCheck) Extra {
	extra := maps.Clone(ex)
	if extra == nil {
		extra = Extra{}
	}
	str := func(v string) json.RawMessage { b, _ := json.Marshal(v); return b }
	extra[SourceStatusField] = json.RawMessage(strconv.Itoa(c.Status))
	extra[SourceCheckedAtField] = str(c.CheckedAt)
	if c.FinalURL != "" {
		extra[SourceFinalURLField] = str(c.FinalURL)
	} else {
		delete(extra, SourceFinalURLField)
	}
	if c.Error != "" {
		extra[SourceCheckErrorField] = str(c.Error)
	} else {
		delete(extra, SourceCheckErrorField)
	}
	return extra
}
