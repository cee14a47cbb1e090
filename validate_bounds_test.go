package incidentlib

import "testing"

// A record's date is of years 0001-9999 and its updated_at inside the
// times the store orders, so that filters on them answer as the calendar
// says (storage/match.go).
func TestValidateTimeBounds(t *testing.T) {
	base := func() *Incident {
		return &Incident{ID: "IL-0001", Org: "Acme", OrgSlug: "acme", Title: Text{En: "t"}}
	}
	if err := base().Validate(); err != nil {
		t.Fatalf("the base record: %v", err)
	}
	for name, set := range map[string]func(*Incident){
		"ErrDateYear0":        func(i *Incident) { i.Date = "0000-05-01" },
		"ErrUpdatedAfter2262": func(i *Incident) { i.UpdatedAt = "2300-01-01T00:00:00Z" },
		"ErrUpdatedBefore1677": func(i *Incident) {
			i.UpdatedAt = "1600-01-01T00:00:00Z"
		},
	} {
		t.Run(name, func(t *testing.T) {
			i := base()
			set(i)
			if err := i.Validate(); ErrorCode(err) != EINVALID {
				t.Fatalf("%v", err)
			}
		})
	}
	i := base()
	i.Date, i.UpdatedAt = "0001-01-01", "2262-01-01T00:00:00Z"
	if err := i.Validate(); err != nil {
		t.Fatal(err)
	}
}
