package admin_test

import (
	"bytes"
	"context"
	"io"
	"log/slog"
	"net/http"
	"testing"

	"github.com/incidentlib/incidentlib/internal/testutil"
	"github.com/incidentlib/incidentlib/server"
	"github.com/incidentlib/incidentlib/server/admin"
	"github.com/incidentlib/incidentlib/storage"
)

// TestPprofAdminListener: pprof answers on its own listener, never on the
// main one, and an address without a host and port is refused.
func TestPprofAdminListener(t *testing.T) {
	t.Run("OnItsOwnListener", func(t *testing.T) {
		addr, stop, err := admin.StartPprof("127.0.0.1:0", slog.New(slog.NewJSONHandler(io.Discard, nil)))
		if err != nil {
			t.Fatal(err)
		}
		defer stop(context.Background())
		resp, err := http.Get("http://" + addr + "/debug/pprof/goroutine?debug=1")
		if err != nil {
			t.Fatal(err)
		}
		b, _ := io.ReadAll(resp.Body)
		resp.Body.Close()
		if resp.StatusCode != 200 || !bytes.Contains(b, []byte("goroutine profile")) {
			t.Fatalf("pprof: %d %.200s", resp.StatusCode, b)
		}
	})
	t.Run("NotOnTheMainListener", func(t *testing.T) {
		hs, _ := testutil.ServerTest(t, testutil.ServerStore(t, nil, storage.Options{}), server.Config{}, testutil.ServerParts{})
		resp, err := hs.Client().Get(hs.URL + "/debug/pprof/")
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
		if resp.StatusCode != http.StatusNotFound {
			t.Errorf("/debug/pprof/ on the main listener: %d", resp.StatusCode)
		}
	})
	t.Run("BadAddressRefused", func(t *testing.T) {
		for _, a := range []string{"6060", "localhost", "127.0.0.1:"} {
			if err := admin.ValidateAdminAddr(a); err == nil {
				t.Errorf("%q accepted", a)
			}
		}
	})
}
