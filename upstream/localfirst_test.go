package upstream_test

import (
	"context"
	"slices"
	"testing"

	"github.com/incidentlib/incidentlib"
	"github.com/incidentlib/incidentlib/upstream"
)

// localStore has some incidents; its other methods are not used.
type localStore struct {
	incidentlib.IncidentService
	incs map[string]*incidentlib.Incident
}

func (l *localStore) FindIncidentsByIDs(_ context.Context, ids []string) ([]*incidentlib.Incident, error) {
	out := make([]*incidentlib.Incident, len(ids))
	for i, id := range ids {
		out[i] = l.incs[id]
	}
	return out, nil
}

// remoteLibrary has other incidents, or fails; it records what it is asked.
type remoteLibrary struct {
	incs  map[string]*incidentlib.Incident
	fail  bool
	asked [][]string
}

func (r *remoteLibrary) FetchIncidents(_ context.Context, ids []string) ([]*incidentlib.Incident, error) {
	r.asked = append(r.asked, ids)
	if r.fail {
		return nil, incidentlib.Errorf(incidentlib.EUPSTREAMUNAVAILABLE, "the upstream library is unavailable")
	}
	out := make([]*incidentlib.Incident, len(ids))
	for i, id := range ids {
		out[i] = r.incs[id]
	}
	return out, nil
}

func TestLocalFirst(t *testing.T) {
	inc := func(id string) *incidentlib.Incident { return &incidentlib.Incident{ID: id} }
	local := &localStore{incs: map[string]*incidentlib.Incident{"IL-0001": inc("IL-0001")}}
	ids := []string{"IL-0001", "IL-9001", "bogus", "IL-9002"}
	ctx := context.Background()

	t.Run("MissingIdsFromTheRemoteInOneCall", func(t *testing.T) {
		remote := &remoteLibrary{incs: map[string]*incidentlib.Incident{"IL-9001": inc("IL-9001")}}
		got, err := upstream.LocalFirst(local, remote).FindIncidentsByIDs(ctx, ids)
		if err != nil {
			t.Fatal(err)
		}
		if got[0] != local.incs["IL-0001"] || got[1] != remote.incs["IL-9001"] || got[2] != nil || got[3] != nil {
			t.Fatalf("got %v", got)
		}
		if len(remote.asked) != 1 || !slices.Equal(remote.asked[0], []string{"IL-9001", "IL-9002"}) {
			t.Fatalf("the remote was asked %v (malformed ids are not asked)", remote.asked)
		}
	})
	t.Run("NoCallWhenTheStoreHasAll", func(t *testing.T) {
		remote := &remoteLibrary{}
		if _, err := upstream.LocalFirst(local, remote).FindIncidentsByIDs(ctx, []string{"IL-0001", "bogus"}); err != nil || len(remote.asked) != 0 {
			t.Fatalf("err %v, asked %v", err, remote.asked)
		}
	})
	t.Run("ErrUpstreamUnavailableIsAPartialRead", func(t *testing.T) {
		got, err := upstream.LocalFirst(local, &remoteLibrary{fail: true}).FindIncidentsByIDs(ctx, ids)
		if !incidentlib.IsPartialRead(got, err) || incidentlib.ErrorCode(err) != incidentlib.EUPSTREAMUNAVAILABLE {
			t.Fatalf("not a partial read: %v, %v", got, err)
		}
		if got[0] != local.incs["IL-0001"] || got[1] != nil {
			t.Fatalf("got %v", got)
		}
	})
}
