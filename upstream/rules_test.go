package upstream_test

import (
	"context"
	"testing"

	"github.com/incidentlib/incidentlib"
	"github.com/incidentlib/incidentlib/internal/testutil"
	"github.com/incidentlib/incidentlib/outbound"
	"github.com/incidentlib/incidentlib/storage"
	"github.com/incidentlib/incidentlib/upstream"
)

// With Rules, the upstream's records are held to the store's taxonomy as
// it is at each read: once an admin adds a term to the store, a record
// of the upstream that uses it is no longer left out.
func TestUpstreamRecordsMeetTheCurrentTaxonomy(t *testing.T) {
	uses := func(i *incidentlib.Incident) { i.Symptoms = []string{"clock-skew-storm"} }
	up := hostileUpstream(t, map[string]string{
		"IL-9001": recordJSON(t, "IL-9001", uses),
		"IL-9002": recordJSON(t, "IL-9002", uses),
	})
	client, err := outbound.New(outbound.DefaultConfig(), nil)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(client.Close)
	db := testutil.OpenStore(t, storage.Options{NoSync: true})
	cfg := upstream.DefaultConfig(up.URL)
	cfg.Rules = db.Incidents().RecordRules
	reader, err := upstream.New(cfg, client, nil)
	if err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	got, err := reader.FetchIncidents(ctx, []string{"IL-9001"})
	if err != nil || got[0] != nil {
		t.Fatalf("a record with a term the store lacks: %v %v", got, err)
	}
	if _, err := db.Taxonomies().AddTerm(ctx, "boss", incidentlib.Term{Kind: incidentlib.KindSymptom, Slug: "clock-skew-storm", Label: incidentlib.Text{En: "Clock skew storm"}}); err != nil {
		t.Fatal(err)
	}
	got, err = reader.FetchIncidents(ctx, []string{"IL-9002"})
	if err != nil || got[0] == nil {
		t.Fatalf("a record with the term added since: %v %v", got, err)
	}
}
