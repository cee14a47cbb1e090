package graph

import (
	"bytes"
	"context"

	"github.com/incidentlib/incidentlib"
	"github.com/incidentlib/incidentlib/graph/model"
)

// importHistories answers importIncidents(histories): an admin's import
// of incidents with their history, written as given in one transaction
// through the request's writer (incidentlib.Writer's HistoryImporter: on
// a cluster node, through the log to every node). The role guard refused any other role
// before the resolver ran (ArgumentRoles); the check here is the second
// lock, and it too refuses before anything is read or written.
func importHistories(ctx context.Context, w incidentlib.Writer, records []*model.IncidentInput, histories []*model.HistoryImportInput) (*model.ImportPayload, error) {
	if _, err := author(ctx, incidentlib.RoleAdmin); err != nil {
		return nil, err
	}
	if len(records) > 0 {
		return &model.ImportPayload{UserErrors: []*model.UserError{{Field: []string{"histories"}, Code: model.UserErrorCodeInvalid,
			Message: "give records or histories, not both: each import is one transaction of one kind"}}}, nil
	}
	lines, err := model.HistoryLines(histories)
	if err == nil {
		var n int
		if n, err = w.ImportHistory(ctx, bytes.NewReader(lines)); err == nil {
			return &model.ImportPayload{Created: n, UserErrors: []*model.UserError{}}, nil
		}
	}
	ues, ok := model.UserErrors([]string{"histories"}, err)
	if !ok {
		return nil, err
	}
	return &model.ImportPayload{UserErrors: ues}, nil
}
