package incidentlib_test

import (
	"bytes"
	"encoding/json"
	"slices"
	"strings"
	"testing"

	"github.com/incidentlib/incidentlib"
)

func eventsRecord(events string) []byte {
	return []byte(`{"id":"IL-0900","org":"Example","org_slug":"example","title":{"en":"An outage"},` +
		`"timeline":{"detected_after":"10m","resolved_after":"73h"},"events":` + events + `}`)
}

// TestEventsRoundTrip: events are kept on a round trip, unknown members
// of an event included, and a record without them is written without them.
func TestEventsRoundTrip(t *testing.T) {
	raw := eventsRecord(`[{"at":"2021-10-28T13:37:00Z","offset":null,"kind":"START","text":{"en":"Vault load rises","ko":"부하 증가"}},` +
		`{"at":null,"offset":"10m","kind":"DETECTED","text":{"en":"Alerts"},"source_row":3},` +
		`{"at":"2021-10-31T14:37:00Z","offset":null,"kind":"RESOLVED","text":{}}]`)
	var inc incidentlib.Incident
	if err := json.Unmarshal(raw, &inc); err != nil {
		t.Fatal(err)
	}
	if err := inc.Validate(); err != nil {
		t.Fatal(err)
	}
	if len(inc.Events) != 3 || inc.Events[1].Offset != "10m" || inc.Events[2].Kind != incidentlib.EventResolved || inc.Events[0].Text.Ko != "부하 증가" {
		t.Fatalf("events %+v", inc.Events)
	}
	once, err := json.Marshal(inc)
	if err != nil {
		t.Fatal(err)
	}
	var back incidentlib.Incident
	if err := json.Unmarshal(once, &back); err != nil {
		t.Fatal(err)
	}
	twice, _ := json.Marshal(back)
	if !bytes.Equal(once, twice) || !bytes.Contains(once, []byte(`"source_row":3`)) {
		t.Fatalf("round trip:\n%s\n%s", once, twice)
	}
	if d, ok := incidentlib.EventOffset(back.Events, 2); !ok || d.Hours() != 73 {
		t.Errorf("offset of the resolution from the times: %v %v", d, ok)
	}
	if w := back.TimelineDisagreements(); len(w) != 0 {
		t.Errorf("73h against 73h, 10m against 10m: %v", w)
	}
	back.Events = nil
	none, _ := json.Marshal(back)
	if bytes.Contains(none, []byte(`"events"`)) {
		t.Errorf("a record without events: %s", none)
	}
}

// TestEventsValidation: kinds from the list, offsets never negative, times
// in RFC 3339 and in order, each error naming its path.
func TestEventsValidation(t *testing.T) {
	for _, c := range []struct {
		name, events string
		field        []string
	}{
		{"UnknownKind", `[{"kind":"START"},{"kind":"BOGUS"}]`, []string{"events", "1", "kind"}},
		{"NegativeOffset", `[{"offset":"-5m","kind":"START"}]`, []string{"events", "0", "offset"}},
		{"BadOffset", `[{"offset":"soon","kind":"START"}]`, []string{"events", "0", "offset"}},
		{"BadTime", `[{"at":"yesterday","kind":"START"}]`, []string{"events", "0", "at"}},
		{"TimeWithoutZone", `[{"at":"2021-10-28T13:37:00","kind":"START"}]`, []string{"events", "0", "at"}},
		{"OutOfOrder", `[{"at":"2021-10-28T13:37:00Z","kind":"START"},{"kind":"OTHER"},{"at":"2021-10-28T12:00:00Z","kind":"DETECTED"}]`, []string{"events", "2", "at"}},
	} {
		t.Run(c.name, func(t *testing.T) {
			var inc incidentlib.Incident
			if err := json.Unmarshal(eventsRecord(c.events), &inc); err != nil {
				t.Fatal(err)
			}
			err := inc.ValidateIncoming(nil, 0, 0)
			es := incidentlib.ErrorList(err)
			if len(es) != 1 || es[0].Code != incidentlib.EINVALID || !slices.Equal(es[0].Field, c.field) {
				t.Fatalf("got %v, want one INVALID at %v", err, c.field)
			}
		})
	}
}

// TestEventsDisagreeWithTimeline: events more than 10% away from the
// stated durations are told, within 10% they are not.
func TestEventsDisagreeWithTimeline(t *testing.T) {
	var inc incidentlib.Incident
	if err := json.Unmarshal(eventsRecord(`[{"offset":"0m","kind":"START"},{"offset":"20m","kind":"DETECTED"},{"offset":"75h","kind":"RESOLVED"}]`), &inc); err != nil {
		t.Fatal(err)
	}
	w := inc.TimelineDisagreements()
	if len(w) != 1 || !strings.Contains(w[0], "detected_after") {
		t.Fatalf("10m against 20m is told, 73h against 75h is not: %v", w)
	}
}
