package importer

import (
	"encoding/json"
	"reflect"
	"testing"

	"github.com/incidentlib/incidentlib"
)

// TestSectionedEvents: the Timeline tables of the dfds records are
// imported as typed events: no absolute time (the cells name no zone), an
// offset from the first row, kinds from the rows' words, the table kept
// in extra.source_timeline, and the events agreeing with the durations.
func TestSectionedEvents(t *testing.T) {
	res := mustLoad(t, Options{}, "testdata/dfds")
	ev := func(offset string, kind incidentlib.EventKind, text string) incidentlib.Event {
		return incidentlib.Event{Offset: offset, Kind: kind, Text: incidentlib.Text{En: text}}
	}
	for _, c := range []struct {
		id   string
		want []incidentlib.Event
	}{
		{"dfds/PM2021-004", []incidentlib.Event{
			ev("0m", incidentlib.EventStart, "Certificate expires"),
			ev("5m", incidentlib.EventDetected, "Reports of sign-in failures"),
			ev("1h24m", incidentlib.EventResolved, "Sign-in confirmed working"),
		}},
		{"dfds/PM2019-001", []incidentlib.Event{
			ev("0m", incidentlib.EventStart, "Accidental command deleted all worker nodes"),
			ev("5m", incidentlib.EventDetected, "Alert fired: workloads unschedulable"),
			ev("1h", incidentlib.EventResolved, "Verified all systems operational"),
		}},
	} {
		inc := record(t, res, c.id).Incident
		if !reflect.DeepEqual(inc.Events, c.want) {
			t.Errorf("%s: events\n got %+v\nwant %+v", c.id, inc.Events, c.want)
		}
		if _, ok := inc.Extra["source_timeline"]; !ok {
			t.Errorf("%s: extra.source_timeline is gone", c.id)
		}
		if w := inc.TimelineDisagreements(); len(w) > 0 {
			t.Errorf("%s: %v", c.id, w)
		}
		// Kept on a round trip through IL-JSON, and valid.
		b, err := json.Marshal(inc)
		if err != nil {
			t.Fatal(err)
		}
		var back incidentlib.Incident
		if err := json.Unmarshal(b, &back); err != nil {
			t.Fatal(err)
		}
		if !reflect.DeepEqual(back.Events, inc.Events) {
			t.Errorf("%s: events after a round trip %+v", c.id, back.Events)
		}
		back.ID = "IL-9999" // given at import
		if err := back.Validate(); err != nil {
			t.Errorf("%s: %v", c.id, err)
		}
	}
}
