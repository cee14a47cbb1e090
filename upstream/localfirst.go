package upstream

import (
	"context"

	"github.com/incidentlib/incidentlib"
)

// LocalFirst returns the incident service of a library that links to
// another: local's, except that FindIncidentsByIDs asks remote, in one
// call, for the well-formed ids local does not have. When remote cannot be
// read, FindIncidentsByIDs returns local's incidents (nil for the ids it
// lacks) together with remote's EUPSTREAMUNAVAILABLE error: a partial read
// (incidentlib.IsPartialRead), which the GraphQL resolvers answer with the
// local data and one UPSTREAM_UNAVAILABLE error beside it.
func LocalFirst(local incidentlib.IncidentService, remote incidentlib.RemoteIncidentReader) incidentlib.IncidentService {
	return &localFirst{IncidentService: local, remote: remote}
}

type localFirst struct {
	incidentlib.IncidentService
	remote incidentlib.RemoteIncidentReader
}

func (l *localFirst) FindIncidentsByIDs(ctx context.Context, ids []string) ([]*incidentlib.Incident, error) {
	incs, err := l.IncidentService.FindIncidentsByIDs(ctx, ids)
	if err != nil {
		return incs, err
	}
	var missing []string
	var at []int
	for i, inc := range incs {
		if inc != nil {
			continue
		}
		if _, ok := incidentlib.ParseID(ids[i]); ok {
			missing = append(missing, ids[i])
			at = append(at, i)
		}
	}
	if len(missing) == 0 {
		return incs, nil
	}
	ups, err := l.remote.FetchIncidents(ctx, missing)
	if err != nil {
		return incs, err
	}
	for k, i := range at {
		incs[i] = ups[k]
	}
	return incs, nil
}
