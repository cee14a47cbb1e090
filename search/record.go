package search

import (
	"bytes"
	"encoding/json"

	"github.com/incidentlib/incidentlib"
	"github.com/incidentlib/incidentlib/iljson"
)

// textsOf returns an incident holding only the fields the index reads
// (org and the texts) from the record's IL-JSON. It scans for those
// fields and skips the rest without decoding it; anything it does not
// expect (a key in another case, malformed JSON) goes through the full
// decoder instead. It reads records the store wrote (valid IL-JSON), for
// which the result is what decoding the record gives (TestTextsOf).
func textsOf(b []byte) (*incidentlib.Incident, error) {
	inc := &incidentlib.Incident{}
	if scanTexts(b, inc) {
		return inc, nil
	}
	var full incidentlib.Incident
	if err := json.Unmarshal(b, &full); err != nil {
		return nil, err
	}
	return &incidentlib.Incident{Org: full.Org, Title: full.Title, Summary: full.Summary, Lessons: full.Lessons,
		Trigger: full.Trigger, Detection: full.Detection, SymptomsText: full.SymptomsText}, nil
}

// text reads a text object (or null) into t.
func text(r *iljson.Reader, t *incidentlib.Text) {
	*t = incidentlib.Text{}
	if r.Null() {
		return
	}
	r.Object(func(k []byte) {
		switch string(k) {
		case "en":
			if !r.Null() {
				t.En = r.String()
			}
		case "ko":
			if !r.Null() {
				t.Ko = r.String()
			}
		default:
			if bytes.EqualFold(k, []byte("en")) || bytes.EqualFold(k, []byte("ko")) {
				r.Fail() // a name in another case: the full decoder's
				return
			}
			r.Skip()
		}
	})
}

var textKeys = [][]byte{[]byte("org"), []byte("title"), []byte("summary"), []byte("lessons"),
	[]byte("trigger"), []byte("detection"), []byte("symptoms_text")}

// scanTexts fills inc's org and texts from b with the codec's scanner
// (iljson.Reader); false if b is not what it expects.
func scanTexts(b []byte, inc *incidentlib.Incident) bool {
	r := iljson.NewReader(b)
	r.Object(func(k []byte) {
		switch string(k) {
		case "org":
			if !r.Null() {
				inc.Org = r.String()
			}
		case "title":
			text(&r, &inc.Title)
		case "summary":
			text(&r, &inc.Summary)
		case "lessons":
			text(&r, &inc.Lessons)
		case "trigger":
			text(&r, &inc.Trigger)
		case "detection":
			text(&r, &inc.Detection)
		case "symptoms_text":
			text(&r, &inc.SymptomsText)
		default:
			for _, t := range textKeys {
				if bytes.EqualFold(k, t) {
					r.Fail() // as above
					return
				}
			}
			r.Skip()
		}
	})
	return r.End()
}
