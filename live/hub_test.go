package live_test

import (
	"context"
	"strconv"
	"sync"
	"sync/atomic"
	"testing"

	"github.com/incidentlib/incidentlib"
	"github.com/incidentlib/incidentlib/internal/testutil"
	"github.com/incidentlib/incidentlib/live"
	"github.com/incidentlib/incidentlib/storage"
)

// The hub over a real store; the transports' tests are in server/ and
// e2e/.

func TestHub(t *testing.T) {
	db := testutil.OpenSeeded(t, storage.Options{})
	hub, err := live.New(db.Incidents(), live.Options{MaxPerClient: 2, MaxTotal: 3})
	if err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	t.Run("Refusals", func(t *testing.T) {
		for since, code := range map[string]string{"x": incidentlib.EBADREQUEST, "-1": incidentlib.EBADREQUEST,
			strconv.FormatUint(db.Incidents().Seq()+1, 10): incidentlib.ESEQUENCEAHEAD} {
			if _, err := hub.Subscribe(ctx, "c", nil, &since); incidentlib.ErrorCode(err) != code {
				t.Errorf("since %q: %v, want %s", since, err, code)
			}
		}
	})
	t.Run("Limits", func(t *testing.T) {
		a, _ := hub.Subscribe(ctx, "c", nil, nil)
		b, _ := hub.Subscribe(ctx, "c", nil, nil)
		if _, err := hub.Subscribe(ctx, "c", nil, nil); incidentlib.ErrorCode(err) != incidentlib.ESUBSCRIPTIONLIMIT {
			t.Errorf("per client: %v", err)
		}
		c, _ := hub.Subscribe(ctx, "d", nil, nil)
		if _, err := hub.Subscribe(ctx, "e", nil, nil); incidentlib.ErrorCode(err) != incidentlib.ESUBSCRIPTIONLIMIT || !hub.Full("e") {
			t.Errorf("total: %v", err)
		}
		for _, s := range []*live.Subscription{a, b, c} {
			s.Close()
		}
		if hub.Full("c") || hub.Stats().Active != 0 {
			t.Errorf("after close: %+v", hub.Stats())
		}
	})
	t.Run("EncodedOnce", func(t *testing.T) {
		var ev live.Event
		var runs atomic.Int32
		var wg sync.WaitGroup
		for range 8 {
			wg.Add(1)
			go func() {
				defer wg.Done()
				b, err := ev.Encoded("k", func() ([]byte, error) { runs.Add(1); return []byte("x"), nil })
				if err != nil || string(b) != "x" {
					t.Errorf("%q %v", b, err)
				}
			}()
		}
		wg.Wait()
		if runs.Load() != 1 {
			t.Errorf("encoded %d times", runs.Load())
		}
	})
	t.Run("Close", func(t *testing.T) {
		s, err := hub.Subscribe(ctx, "c", nil, nil)
		if err != nil {
			t.Fatal(err)
		}
		hub.Close()
		if _, err := s.Next(ctx); err != live.ErrClosed {
			t.Errorf("after Close: %v", err)
		}
		if _, err := hub.Subscribe(ctx, "c", nil, nil); incidentlib.ErrorCode(err) != incidentlib.EUNAVAILABLE {
			t.Errorf("subscribe after Close: %v", err)
		}
		<-hub.Idle()
	})
}
