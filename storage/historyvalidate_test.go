package storage

import (
	"encoding/json"
	"fmt"
	"slices"
	"testing"

	"github.com/incidentlib/incidentlib"
)

// hv is a version of IL-0001 at minute v, by kim, with its record unless
// the action leaves none.
func hv(v int, action incidentlib.ChangeAction, deleted bool) incidentlib.IncidentVersion {
	x := incidentlib.IncidentVersion{ID: "IL-0001", Version: v, At: fmt.Sprintf("2026-03-01T09:%02d:00Z", v), Author: "kim", AuthorRole: "editor", Action: action, Deleted: deleted}
	if !deleted {
		x.Record = json.RawMessage(fmt.Sprintf(`{"id":"IL-0001","version":%d}`, v))
	}
	return x
}

// TestValidateHistory: the histories the store writes pass the history
// grammar; each break is EINVALID naming the version's member; gaps and
// times that go back pass only with their allowance.
func TestValidateHistory(t *testing.T) {
	const (
		c, u, d, r, p, m, i = incidentlib.ActionCreate, incidentlib.ActionUpdate, incidentlib.ActionDelete, incidentlib.ActionRestore,
			incidentlib.ActionPurge, incidentlib.ActionMerge, incidentlib.ActionImport
	)
	purge := func(v, target int, deleted bool) incidentlib.IncidentVersion {
		x := hv(v, p, deleted)
		x.Target = target
		return x
	}
	noRecord := func(x incidentlib.IncidentVersion) incidentlib.IncidentVersion { x.Record = nil; return x }
	for name, vs := range map[string][]incidentlib.IncidentVersion{
		"CreateUpdate":         {hv(1, c, false), hv(2, u, false)},
		"DeleteRestore":        {hv(1, c, false), hv(2, d, true), hv(3, r, false)},
		"PurgeOfLive":          {noRecord(hv(1, c, false)), hv(2, u, false), purge(3, 1, false)},
		"PurgeOfDeleted":       {noRecord(hv(1, c, false)), hv(2, d, true), purge(3, 1, true)},
		"MergedAway":           {hv(1, c, false), hv(2, m, true)},
		"ImportWithItsVersion": {hv(7, i, false), hv(8, u, false)},
	} {
		t.Run(name, func(t *testing.T) {
			if es := validateHistory("IL-0001", vs, incidentlib.HistoryAllowances{}); len(es) > 0 {
				t.Fatal(es)
			}
		})
	}
	for name, c := range map[string]struct {
		vs     []incidentlib.IncidentVersion
		at     int
		member string
		allow  incidentlib.HistoryAllowances
	}{
		"Gap":                {[]incidentlib.IncidentVersion{hv(1, c, false), hv(3, u, false)}, 1, "version", incidentlib.HistoryAllowances{Gaps: true}},
		"FirstNotOne":        {[]incidentlib.IncidentVersion{hv(2, u, false)}, 0, "version", incidentlib.HistoryAllowances{Gaps: true}},
		"VersionRepeated":    {[]incidentlib.IncidentVersion{hv(2, c, false), func() incidentlib.IncidentVersion { x := hv(2, u, false); x.Version = 2; return x }()}, 1, "version", incidentlib.HistoryAllowances{}},
		"LastWithoutRecord":  {[]incidentlib.IncidentVersion{hv(1, c, false), noRecord(hv(2, u, false))}, 1, "record", incidentlib.HistoryAllowances{}},
		"DeleteNotTombstone": {[]incidentlib.IncidentVersion{hv(1, c, false), hv(2, d, false)}, 1, "deleted", incidentlib.HistoryAllowances{}},
		"UpdateAfterDelete":  {[]incidentlib.IncidentVersion{hv(1, c, false), hv(2, d, true), hv(3, u, false)}, 2, "action", incidentlib.HistoryAllowances{}},
		"PurgedKeepsRecord":  {[]incidentlib.IncidentVersion{hv(1, c, false), hv(2, u, false), purge(3, 1, false)}, 2, "target", incidentlib.HistoryAllowances{}},
		"PurgeWithoutTarget": {[]incidentlib.IncidentVersion{hv(1, c, false), hv(2, u, false), purge(3, 0, false)}, 2, "target", incidentlib.HistoryAllowances{}},
		"TargetOnUpdate":     {[]incidentlib.IncidentVersion{hv(1, c, false), func() incidentlib.IncidentVersion { x := hv(2, u, false); x.Target = 1; return x }()}, 1, "target", incidentlib.HistoryAllowances{}},
		"RestoreFirst":       {[]incidentlib.IncidentVersion{hv(1, r, false)}, 0, "action", incidentlib.HistoryAllowances{}},
	} {
		t.Run(name, func(t *testing.T) {
			es := validateHistory("IL-0001", c.vs, incidentlib.HistoryAllowances{})
			want := []string{"history", fmt.Sprint(c.at), c.member}
			if !slices.ContainsFunc(es, func(e *incidentlib.Error) bool { return e.Code == incidentlib.EINVALID && slices.Equal(e.Field, want) }) {
				t.Fatalf("no EINVALID on %v: %v", want, es)
			}
			if c.allow != (incidentlib.HistoryAllowances{}) {
				if es := validateHistory("IL-0001", c.vs, c.allow); len(es) > 0 {
					t.Fatalf("refused with %+v: %v", c.allow, es)
				}
				if got := historyAllowancesOf(c.vs); got != c.allow {
					t.Fatalf("historyAllowancesOf says %+v, want %+v", got, c.allow)
				}
			}
		})
	}
	t.Run("TimesBack", func(t *testing.T) {
		vs := []incidentlib.IncidentVersion{hv(1, c, false), hv(2, u, false)}
		vs[1].At = "2026-03-01T08:00:00Z"
		if es := validateHistory("IL-0001", vs, incidentlib.HistoryAllowances{}); !slices.ContainsFunc(es, func(e *incidentlib.Error) bool { return slices.Equal(e.Field, []string{"history", "1", "at"}) }) {
			t.Fatal(es)
		}
		allow := historyAllowancesOf(vs)
		if !allow.Unordered || len(validateHistory("IL-0001", vs, allow)) > 0 {
			t.Fatalf("%+v", allow)
		}
	})
}
