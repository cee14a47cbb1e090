package incidentlib

import "context"

// The bilingual glossary search translates queries with (package glossary
// validates it and reads its file). A store holds it beside the taxonomy,
// seeded from the built-in one; an admin changes it (TaxonomyWriter), each
// change recorded in the taxonomy's history (ActionGlossary*).

// GlossaryEntry is one pair of the glossary: the English and the Korean
// words or phrases of one meaning, each side's preferred form first; its
// key is its first English form in lower case. Note is for its reviewers.
type GlossaryEntry struct {
	En   []string `json:"en"`
	Ko   []string `json:"ko"`
	Note string   `json:"note,omitempty"`
}

// Glossary is a glossary at one version.
type Glossary struct {
	Entries []GlossaryEntry
	// Version changes whenever the entries do.
	Version uint64
}

// GlossaryReader gives the glossary as it is now.
type GlossaryReader interface {
	Glossary(ctx context.Context) (*Glossary, error)
}
