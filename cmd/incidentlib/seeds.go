package main

import (
	"context"
	"errors"
	"fmt"
	"io"

	"github.com/incidentlib/incidentlib"
	"github.com/incidentlib/incidentlib/graph/model"
	"github.com/incidentlib/incidentlib/seeds"
	"github.com/incidentlib/incidentlib/storage"
)

// seeds update: bring the seed incidents of an existing store to the seed
// records this binary ships (issue #22: the seeds' corrected provenance).
// Each seed incident the store holds is written through the ordinary
// upsert, which writes only a record that differs (updated_at and the
// review state aside) and stamps it like any edit; so a second run writes
// nothing. Seeds the store does not hold (deleted, or a store started with
// --seed none) are left out, and nothing else in the store is touched.

// seedTarget is where seeds update writes: the store or a running server.
type seedTarget interface {
	// updatedAt returns, for each id the store holds, its updated_at.
	updatedAt(ctx context.Context, ids []string) (map[string]string, error)
	// upsert writes inc unless it is stored as it is, and returns the
	// stored record's updated_at.
	upsert(ctx context.Context, inc *incidentlib.Incident) (string, error)
}

// seedsUpdateResult says what seeds update did.
type seedsUpdateResult struct {
	Written, Unchanged int
	Missing            []string // seed ids the store does not hold
}

func updateSeeds(ctx context.Context, t seedTarget) (*seedsUpdateResult, error) {
	incs, err := seeds.Incidents()
	if err != nil {
		return nil, err
	}
	ids := make([]string, len(incs))
	for i, inc := range incs {
		ids[i] = inc.ID
	}
	have, err := t.updatedAt(ctx, ids)
	if err != nil {
		return nil, err
	}
	res := &seedsUpdateResult{}
	for _, inc := range incs {
		before, ok := have[inc.ID]
		if !ok {
			res.Missing = append(res.Missing, inc.ID)
			continue
		}
		after, err := t.upsert(ctx, inc)
		if err != nil {
			return res, fmt.Errorf("seeds update: %s: %w", inc.ID, err)
		}
		if after != before {
			res.Written++
		} else {
			res.Unchanged++
		}
	}
	return res, nil
}

func runSeeds(ctx context.Context, args []string, getenv func(string) string, stdout, stderr io.Writer) error {
	if len(args) == 0 || args[0] != "update" {
		fmt.Fprint(stderr, "usage: incidentlib seeds update --db PATH | --server URL --token TOKEN\n\n"+
			"Brings the seed incidents an existing store holds to the seed records of this binary,\n"+
			"writing only those that differ (stamped like any edit); a second run writes nothing.\n")
		return exitCode(2)
	}
	f := newFlags("seeds update", getenv, stderr)
	sf := addStoreFlags(f)
	rf := addRemoteFlags(f, "update the seeds of the running server at this URL (upsertIncident) instead of opening --db")
	if err := f.parse(args[1:]); err != nil {
		return err
	}
	if f.NArg() > 0 {
		return fmt.Errorf("seeds update: unexpected argument %q", f.Arg(0))
	}
	report := func(res *seedsUpdateResult, where string) {
		fmt.Fprintf(stdout, "seeds update %s: %d written, %d unchanged", where, res.Written, res.Unchanged)
		if len(res.Missing) > 0 {
			fmt.Fprintf(stdout, ", %d not in the store (left out)", len(res.Missing))
		}
		fmt.Fprintln(stdout)
	}
	if rf.remote() {
		r, err := rf.dial()
		if err != nil {
			return err
		}
		defer r.close()
		res, err := updateSeeds(ctx, remoteSeeds{r})
		if err != nil {
			return err
		}
		report(res, r.base)
		return nil
	}
	return sf.with(false, func(db *storage.DB) error {
		res, err := updateSeeds(ctx, localSeeds{db})
		if err != nil {
			return err
		}
		report(res, *sf.path)
		return nil
	})
}

// localSeeds writes into an open store.
type localSeeds struct{ db *storage.DB }

func (l localSeeds) updatedAt(ctx context.Context, ids []string) (map[string]string, error) {
	incs, err := l.db.Incidents().FindIncidentsByIDs(ctx, ids)
	if err != nil {
		return nil, err
	}
	out := map[string]string{}
	for _, inc := range incs {
		if inc != nil {
			out[inc.ID] = inc.UpdatedAt
		}
	}
	return out, nil
}

func (l localSeeds) upsert(ctx context.Context, inc *incidentlib.Incident) (string, error) {
	c := *inc
	c.UpdatedAt = ""
	// The history's author of the seeds' writes.
	ctx = incidentlib.WithIdentity(ctx, incidentlib.Identity{Name: incidentlib.AuthorSeeds, Role: incidentlib.RoleAdmin})
	out, err := l.db.Incidents().UpsertIncident(ctx, &c, incidentlib.WriteOptions{})
	if err != nil {
		return "", err
	}
	return out.UpdatedAt, nil
}

// remoteSeeds writes through a running server's upsertIncident.
type remoteSeeds struct{ r *remote }

func (s remoteSeeds) updatedAt(ctx context.Context, ids []string) (map[string]string, error) {
	var out struct {
		Nodes []*struct{ ID, UpdatedAt string }
	}
	err := s.r.graphql(ctx, `query SeedIDs($ids: [ID!]!) { nodes(ids: $ids) { ... on Incident { id updatedAt } } }`,
		map[string]any{"ids": ids}, &out)
	if err != nil {
		return nil, err
	}
	m := map[string]string{}
	for _, n := range out.Nodes {
		if n != nil && n.ID != "" {
			m[n.ID] = n.UpdatedAt
		}
	}
	return m, nil
}

const upsertSeedMutation = `mutation UpsertSeed($input: IncidentInput!) {
  upsertIncident(input: $input) { incident { updatedAt } userErrors { field message code } }
}`

func (s remoteSeeds) upsert(ctx context.Context, inc *incidentlib.Incident) (string, error) {
	var out struct {
		UpsertIncident struct {
			Incident   *struct{ UpdatedAt string }
			UserErrors []struct {
				Field   []string
				Message string
				Code    string
			}
		} `json:"upsertIncident"`
	}
	if err := s.r.graphql(ctx, upsertSeedMutation, map[string]any{"input": model.InputOf(inc)}, &out); err != nil {
		return "", err
	}
	p := out.UpsertIncident
	if len(p.UserErrors) > 0 {
		return "", errors.New(p.UserErrors[0].Code + ": " + p.UserErrors[0].Message)
	}
	if p.Incident == nil {
		return "", errors.New("the server answered no incident")
	}
	return p.Incident.UpdatedAt, nil
}
