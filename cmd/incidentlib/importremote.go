package main

import (
	"context"
	"fmt"
	"io"
	"strconv"

	"github.com/RoaringBitmap/roaring/v2"

	"github.com/incidentlib/incidentlib"
	"github.com/incidentlib/incidentlib/graph/model"
	"github.com/incidentlib/incidentlib/importer"
)

const importMutation = `mutation Import($records: [IncidentInput!]!) {
  importIncidents(records: $records) { created updated unchanged userErrors { field message code } }
}`

// importRemote streams the IL-JSON files to the server through
// importIncidents, chunk records per request (0: all in one), each
// request all or nothing. A first pass checks every record as import --db
// does, record by record (the same size limit and messages), and sends
// nothing if one is bad. A record linking to one that a later request
// sends goes without those links first and again, whole, after the last
// request, so that the server finds every link it checks.
func importRemote(ctx context.Context, rf remoteFlags, files []importInput, chunk, maxRecord int, stdout, stderr io.Writer) error {
	ids := roaring.New()
	var problems []string
	total := 0
	err := streamRecords(files, maxRecord, false, func(rec importer.Record, _ uint32, size int) error {
		if n, ok := incidentlib.ParseID(rec.Incident.ID); ok {
			ids.Add(n)
		}
		total++
		trackHeld(1, size)
		return nil
	}, func(p importer.Problem) { problems = append(problems, p.String()) })
	if err != nil {
		return err
	}
	if len(problems) > 0 {
		return reportProblems(stderr, problems)
	}
	r, err := rf.dial()
	if err != nil {
		return err
	}
	defer r.close()
	if chunk <= 0 || chunk > total {
		chunk = max(total, 1)
	}
	var sum incidentlib.ImportResult
	sent := roaring.New()  // ids the server has
	later := roaring.New() // ordinals of records sent without their links to later ones
	var part []importer.Record
	done := 0
	send := func() error {
		trackHeld(len(part), 0)
		res, err := r.importChunk(ctx, part, done, stderr)
		if err != nil {
			return err
		}
		addResult(&sum, res)
		done += len(part)
		clear(part)
		part = part[:0]
		return nil
	}
	first := uint32(0)
	err = streamRecords(files, maxRecord, true, func(rec importer.Record, seq uint32, _ int) error {
		if len(part) == 0 {
			first = seq
		}
		part = append(part, rec)
		if len(part) < chunk {
			return nil
		}
		deferLinks(part, first, ids, sent, later)
		return send()
	}, func(importer.Problem) {})
	if err == nil && len(part) > 0 {
		deferLinks(part, first, ids, sent, later)
		err = send()
	}
	if err == nil && !later.IsEmpty() {
		// The records sent without some links, again with all of them.
		err = streamRecords(files, maxRecord, true, func(rec importer.Record, seq uint32, _ int) error {
			if !later.Contains(seq) {
				return nil
			}
			part = append(part, rec)
			if len(part) < chunk {
				return nil
			}
			return send()
		}, func(importer.Problem) {})
		if err == nil && len(part) > 0 {
			err = send()
		}
	}
	if err != nil {
		return err
	}
	fmt.Fprintf(stdout, "imported %d records into %s: %d created, %d updated, %d unchanged\n",
		total, r.base, sum.Created, sum.Updated-int(later.GetCardinality()), sum.Unchanged)
	return nil
}

// deferLinks takes out of the records of part (ordinals from first) their
// links to records of the import the server does not have yet and that
// part does not hold, noting them in later; it adds part's ids to sent.
func deferLinks(part []importer.Record, first uint32, ids, sent, later *roaring.Bitmap) {
	here := roaring.New()
	for _, rec := range part {
		if n, ok := incidentlib.ParseID(rec.Incident.ID); ok {
			here.Add(n)
		}
	}
	pending := func(id string) bool {
		n, ok := incidentlib.ParseID(id)
		return ok && ids.Contains(n) && !sent.Contains(n) && !here.Contains(n)
	}
	for i, rec := range part {
		inc := rec.Incident
		var keep []string
		cut := false
		for _, r := range inc.Related {
			if pending(r) {
				cut = true
				continue
			}
			keep = append(keep, r)
		}
		if cut || pending(inc.RecurrenceOf) {
			c := *inc
			c.Related = keep
			if pending(c.RecurrenceOf) {
				c.RecurrenceOf = ""
			}
			part[i].Incident = &c
			later.Add(first + uint32(i))
		}
	}
	sent.Or(here)
}

// importChunk sends one request; done records were sent before it.
func (r *remote) importChunk(ctx context.Context, part []importer.Record, done int, stderr io.Writer) (*incidentlib.ImportResult, error) {
	inputs := make([]*model.IncidentInput, len(part))
	for i, rec := range part {
		inputs[i] = model.InputOf(rec.Incident)
	}
	var out struct {
		ImportIncidents struct {
			Created, Updated, Unchanged int
			UserErrors                  []struct {
				Field   []string
				Message string
				Code    string
			}
		} `json:"importIncidents"`
	}
	if err := r.graphql(ctx, importMutation, map[string]any{"records": inputs}, &out); err != nil {
		if done > 0 {
			fmt.Fprintf(stderr, "import: the first %d records were written\n", done)
		}
		return nil, err
	}
	res := out.ImportIncidents
	if len(res.UserErrors) > 0 {
		var problems []string
		for _, e := range res.UserErrors {
			where := ""
			if len(e.Field) >= 2 && e.Field[0] == "records" {
				if i, err := strconv.Atoi(e.Field[1]); err == nil && i < len(part) {
					where = part[i].Where + ": "
				}
			}
			problems = append(problems, where+e.Message)
		}
		if done > 0 {
			fmt.Fprintf(stderr, "import: the first %d records were written; records %d to %d were not; fix the cause and re-run it: imports are idempotent\n", done, done, done+len(part)-1)
		}
		return nil, reportProblems(stderr, problems)
	}
	return &incidentlib.ImportResult{Created: res.Created, Updated: res.Updated, Unchanged: res.Unchanged}, nil
}
