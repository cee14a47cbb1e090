package model

import (
	"encoding/json"

	"github.com/incidentlib/incidentlib"
)

// IncidentVersion is one version of an incident's history.
type IncidentVersion struct {
	V *incidentlib.IncidentVersion
}

// NewIncidentVersion wraps v, or returns nil for nil.
func NewIncidentVersion(v *incidentlib.IncidentVersion) *IncidentVersion {
	if v == nil {
		return nil
	}
	return &IncidentVersion{V: v}
}

func (v *IncidentVersion) Version() int                     { return v.V.Version }
func (v *IncidentVersion) At() string                       { return v.V.At }
func (v *IncidentVersion) Action() incidentlib.ChangeAction { return v.V.Action }
func (v *IncidentVersion) ChangedFields() []string {
	if v.V.ChangedFields == nil {
		return []string{}
	}
	return v.V.ChangedFields
}
func (v *IncidentVersion) Comment() *string        { return field(&v.V.Comment) }
func (v *IncidentVersion) Record() json.RawMessage { return v.V.Record }
func (v *IncidentVersion) Deleted() bool           { return v.V.Deleted }

// Author is who wrote the version.
func (v *IncidentVersion) Author() *HistoryAuthor {
	return &HistoryAuthor{Name: v.V.Author, Role: field(&v.V.AuthorRole)}
}

// Version is the incident's version.
func (i *Incident) Version() int { return i.Inc.CurrentVersion() }

// CreatedAt is when the incident was created, nil where unknown.
func (i *Incident) CreatedAt() *string { return field(&i.Inc.CreatedAt) }

// ReviewState is the incident's review state.
func (i *Incident) ReviewState() incidentlib.ReviewState { return i.Inc.State() }
