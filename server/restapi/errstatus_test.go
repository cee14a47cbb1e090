package restapi

import (
	"encoding/json"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"testing"

	"github.com/incidentlib/incidentlib"
)

// TestErrorStatuses walks the one table: the REST API answers every code
// with the table's status (READ_ONLY 403, SEQUENCE_AHEAD 400,
// STORAGE_FULL 503 among them, which disagreed before) and the code in
// the body.
func TestErrorStatuses(t *testing.T) {
	a := &API{logger: slog.New(slog.NewTextHandler(io.Discard, nil))}
	for _, code := range incidentlib.Codes() {
		t.Run(code, func(t *testing.T) {
			rec := httptest.NewRecorder()
			a.writeError(rec, httptest.NewRequest(http.MethodGet, "/api/v1/changes", nil), incidentlib.Errorf(code, "x"))
			if want := incidentlib.HTTPStatus(code); rec.Code != want {
				t.Fatalf("status %d, the table says %d", rec.Code, want)
			}
			var body struct{ Error struct{ Code string } }
			if err := json.Unmarshal(rec.Body.Bytes(), &body); err != nil || body.Error.Code != code {
				t.Fatalf("body %s", rec.Body)
			}
		})
	}
	for code, want := range map[string]int{incidentlib.EREADONLY: 403, incidentlib.ESEQUENCEAHEAD: 400, incidentlib.ESTORAGEFULL: 503} {
		if got := incidentlib.HTTPStatus(code); got != want {
			t.Errorf("%s is %d, error.go documents %d", code, got, want)
		}
	}
}
