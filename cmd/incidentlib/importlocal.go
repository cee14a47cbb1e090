package main

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"os"
	"sort"
	"strings"
	"time"

	"github.com/incidentlib/incidentlib"
	"github.com/incidentlib/incidentlib/importer"
	"github.com/incidentlib/incidentlib/seeds"
	"github.com/incidentlib/incidentlib/storage"
)

// readCollections reads files and directories in any format the importer
// knows (or the one forced with --format), whole, and refuses records over
// maxRecord bytes of canonical IL-JSON.
func readCollections(inputs []importInput, format string, maxRecord int) (*importer.Result, error) {
	tax, err := seeds.Taxonomy()
	if err != nil {
		return nil, err
	}
	opts := importer.Options{Format: importer.Format(format), Taxonomy: tax}
	var files []string
	res := &importer.Result{Format: map[string]importer.Format{}}
	for _, in := range inputs {
		if in.name == in.path {
			files = append(files, in.path)
			continue
		}
		data, err := os.ReadFile(in.path)
		if err != nil {
			return nil, err
		}
		r, err := importer.LoadData(in.name, data, opts)
		if err != nil {
			return nil, err
		}
		merge(res, r)
	}
	if len(files) > 0 {
		r, err := importer.Load(files, opts)
		if err != nil {
			return nil, err
		}
		merge(res, r)
	}
	kept := res.Records[:0]
	for _, r := range res.Records {
		b, err := json.Marshal(r.Incident)
		if err != nil {
			return nil, err
		}
		if err := incidentlib.CheckRecordSize(r.Incident.ID, len(b), maxRecord); err != nil {
			res.Problems = append(res.Problems, importer.Problem{Where: r.Where, ID: r.Incident.ID, Reason: incidentlib.ErrorMessage(err)})
			continue
		}
		kept = append(kept, r)
	}
	res.Records = kept
	return res, nil
}

func merge(dst, src *importer.Result) {
	dst.Records = append(dst.Records, src.Records...)
	dst.Problems = append(dst.Problems, src.Problems...)
	dst.Skipped = append(dst.Skipped, src.Skipped...)
	for k, v := range src.Format {
		dst.Format[k] = v
	}
}

// progress prints records done, rate and time left to a terminal, at most
// a few times a second; elsewhere it prints nothing.
type progress struct {
	w     io.Writer
	on    bool
	start time.Time
	last  time.Time
	what  string
}

func newProgress(w io.Writer, what string) *progress {
	on := false
	if f, ok := w.(*os.File); ok {
		if fi, err := f.Stat(); err == nil && fi.Mode()&os.ModeCharDevice != 0 {
			on = true
		}
	}
	return &progress{w: w, on: on, start: time.Now(), what: what}
}

func (p *progress) update(done, total int) {
	if !p.on || (time.Since(p.last) < 250*time.Millisecond && done < total) {
		return
	}
	p.last = time.Now()
	el := time.Since(p.start).Seconds()
	rate := float64(done) / max(el, 1e-9)
	left := "?"
	if rate > 0 {
		left = (time.Duration(float64(total-done)/rate) * time.Second).Round(time.Second).String()
	}
	fmt.Fprintf(p.w, "\r%s %d/%d records, %.0f/s, %s left   ", p.what, done, total, rate, left)
	if done >= total {
		fmt.Fprintln(p.w)
	}
}

// importLocal imports collections into the store at --db: it plans stable
// ids (by source key, then by source URL), writes everything in one
// transaction, and prints a summary.
func importLocal(ctx context.Context, db *storage.DB, res *importer.Result, skipBad bool, stdout, stderr io.Writer) error {
	bad := map[string]bool{}
	for _, p := range res.Problems {
		bad[p.Where] = true
	}
	var problems []string
	for _, p := range res.Problems {
		problems = append(problems, p.String())
	}
	if len(problems) > 0 && !skipBad {
		return reportProblems(stderr, problems)
	}
	all, err := db.Incidents().AllIncidents(ctx)
	if err != nil {
		return err
	}
	plan, err := importer.PlanImport(res.Records, importer.NewIndex(all))
	if err != nil {
		return err
	}
	prog := newProgress(stderr, "writing")
	out, err := db.Incidents().ImportIncidents(ctx, plan.Upserts, incidentlib.ImportOptions{
		KeepUpdatedAt: true, Merges: plan.Merges, Progress: prog.update,
	})
	if err != nil {
		return reportInvalid(stderr, err)
	}
	counts := plan.Counts()
	fmt.Fprintf(stdout, "imported %d records into %d incidents: %d created, %d updated, %d merged; %d incidents written, %d unchanged\n",
		len(res.Records), len(plan.Upserts), counts[importer.ActionCreate], counts[importer.ActionUpdate], counts[importer.ActionMerge],
		out.Created+out.Updated, out.Unchanged)
	if len(plan.Merges) > 0 {
		from := make([]string, 0, len(plan.Merges))
		for d := range plan.Merges {
			from = append(from, d)
		}
		sort.Strings(from)
		for _, d := range from {
			fmt.Fprintf(stdout, "merged %s into %s (the same postmortem); %s keeps resolving\n", d, plan.Merges[d], d)
		}
	}
	reportSkipped(stdout, problems, res.Skipped)
	if um := importer.UnmappedCounts(res.Records); len(um) > 0 {
		total := 0
		var top []string
		for i, u := range um {
			total += u.Count
			if i < 10 {
				top = append(top, fmt.Sprintf("%s (%d)", u.Value, u.Count))
			}
		}
		fmt.Fprintf(stdout, "%d source categories and keywords (%d distinct) map to no taxonomy term; kept on the records as source_tags. Most common: %s\n",
			total, len(um), strings.Join(top, ", "))
	}
	return nil
}
