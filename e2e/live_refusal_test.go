package e2e

import (
	"context"
	"encoding/json"
	"os/exec"
	"strconv"
	"testing"
	"time"
)

// TestSubscriptionSSERefusalsAtOnce: graphql-sse with its default retries
// (five) receives a refused subscription's code at once, as the `errors`
// of a result, after one request, where a 4xx status would be retried
// and then reported only as "Server responded with 400"
// (server/gqledge/streams/refusal.go).
func TestSubscriptionSSERefusalsAtOnce(t *testing.T) {
	ts, db, _ := liveServer(t)
	node := nodeAudit(t)
	for name, c := range map[string]struct {
		since, token, code string
	}{
		"ErrSequenceAhead": {strconv.FormatUint(db.Incidents().Seq()+1000, 10), "", "SEQUENCE_AHEAD"},
		"ErrBadSince":      {"x1", "", "BAD_REQUEST"},
		"ErrBadToken":      {"", "il_not-a-token", "UNAUTHENTICATED"},
	} {
		t.Run(name, func(t *testing.T) {
			ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
			defer cancel()
			args := []string{"live-refusal.mjs", ts.URL, c.since}
			if c.token != "" {
				args = append(args, c.token)
			}
			out, err := exec.CommandContext(ctx, node, args...).Output()
			if err != nil {
				t.Fatalf("node live-refusal.mjs: %v %s", err, out)
			}
			var got struct {
				Results []struct {
					Data   json.RawMessage
					Errors []struct {
						Message    string
						Extensions struct{ Code string }
					}
				}
				Error    string
				Requests int
			}
			if err := json.Unmarshal(out, &got); err != nil {
				t.Fatalf("%s: %v", out, err)
			}
			if got.Requests != 1 {
				t.Errorf("the client made %d requests, want 1 (a retried refusal): %s", got.Requests, out)
			}
			if got.Error != "" || len(got.Results) != 1 || len(got.Results[0].Data) != 0 && string(got.Results[0].Data) != "null" ||
				len(got.Results[0].Errors) == 0 || got.Results[0].Errors[0].Extensions.Code != c.code {
				t.Fatalf("want one result with the errors, code %s: %s", c.code, out)
			}
		})
	}
}
