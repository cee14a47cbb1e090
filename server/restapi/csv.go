package restapi

import (
	"encoding/csv"
	"io"
	"net/http"
	"strings"

	"github.com/incidentlib/incidentlib"
)

// CSVColumns are the columns of the CSV export, in order (docs/exports.md).
var CSVColumns = []string{"id", "date", "organization", "title_en", "title_ko", "summary_en", "summary_ko",
	"domains", "symptoms", "components", "root_cause", "severity", "detected_after", "resolved_after", "url", "updated_at"}

// csvBOM starts the file, so that spreadsheets read it as UTF-8 (Korean
// included).
const csvBOM = "\uFEFF"

// csvListSep joins the items of a list column.
const csvListSep = ";"

// csvRow returns inc's cells, in the order of CSVColumns: each language's
// own text (empty when the record has none: no fallback to the other
// language), lists as slugs joined by csvListSep, empty for what the
// record does not say.
func csvRow(inc *incidentlib.Incident, row []string) []string {
	row = append(row[:0], inc.ID, inc.Date, inc.Org, inc.Title.En, inc.Title.Ko, inc.Summary.En, inc.Summary.Ko,
		strings.Join(inc.Domain, csvListSep), strings.Join(inc.Symptoms, csvListSep), strings.Join(inc.Components, csvListSep),
		inc.RootCause, inc.Severity, inc.Timeline.DetectedAfter, inc.Timeline.ResolvedAfter, inc.URL, inc.UpdatedAt)
	for i, c := range row {
		row[i] = defuse(c)
	}
	return row
}

// defuse puts ' before a cell that a spreadsheet would read as a formula:
// one that begins with =, +, - or @; and before one that begins with '
// itself, so that "one leading ' was added" holds of every cell that
// begins with ' (a title that really starts with ' is told from a
// defused formula).
func defuse(cell string) string {
	if cell != "" && strings.ContainsRune("=+-@'", rune(cell[0])) {
		return "'" + cell
	}
	return cell
}

// csv serves GET /api/v1/incidents.csv.
func (x *exports) csv(w http.ResponseWriter, r *http.Request) {
	f, norm, err := parseFilter(r.URL.Query(), nil)
	if err != nil {
		x.api.writeError(w, r, err)
		return
	}
	err = x.downloads.ServeDownload(w, r, "csv\x00"+norm, csvCost, "text/csv; charset=utf-8; header=present", func(out io.Writer) error {
		cw := csv.NewWriter(out)
		cw.UseCRLF = true // RFC 4180
		started := false
		start := func() error {
			started = true
			if _, err := io.WriteString(out, csvBOM); err != nil {
				return err
			}
			return cw.Write(CSVColumns)
		}
		row := make([]string, 0, len(CSVColumns))
		err := x.eachIncident(r, f, incidentlib.DefaultOrder, 0, func(inc *incidentlib.Incident) error {
			if !started {
				if err := start(); err != nil {
					return err
				}
			}
			row = csvRow(inc, row)
			return cw.Write(row)
		})
		if err == nil && !started {
			err = start()
		}
		if err != nil {
			return err
		}
		cw.Flush()
		return cw.Error()
	})
	if err != nil {
		x.api.writeError(w, r, err)
	}
}
