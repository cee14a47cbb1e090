package cluster

import (
	"fmt"
	"io"
	"log/slog"
	"path/filepath"
	"sync"
	"testing"
	"time"

	"github.com/nats-io/nats-server/v2/server"
	"github.com/nats-io/nats.go"

	"github.com/incidentlib/incidentlib/internal/testutil"
)

// TestClientListenerIsFull checks that the client listener nats-server
// needs before it starts its routes refuses a connection that has the
// token once the node's own connection is made: nobody else can publish
// into the stream, even from inside the host.
func TestClientListenerIsFull(t *testing.T) {
	const token = "the-node-token-known-to-this-test"
	peers := []string{testutil.FreeAddr(t), testutil.FreeAddr(t), testutil.FreeAddr(t)}
	srvs := make([]*server.Server, 3)
	errs := make([]error, 3)
	var wg sync.WaitGroup
	for i := range 3 {
		wg.Add(1)
		go func() { // each waits for the others' routes
			defer wg.Done()
			cfg := Config{ClusterName: "t", NodeName: fmt.Sprint("n", i), Listen: peers[i], Peers: peers, Secret: "a-shared-secret-of-the-test",
				StoreDir: filepath.Join(t.TempDir(), "js"), Logger: slog.New(slog.NewTextHandler(io.Discard, nil))}
			cfg.defaults()
			srvs[i], errs[i] = startEmbedded(cfg, token, cfg.Logger)
		}()
	}
	wg.Wait()
	for i, err := range errs {
		if err != nil {
			t.Fatal(err)
		}
		defer srvs[i].Shutdown()
	}
	own, err := nats.Connect("", nats.InProcessServer(srvs[0]), nats.Token(token))
	if err != nil {
		t.Fatal(err)
	}
	defer own.Close()
	nc, err := nats.Connect("nats://"+srvs[0].Addr().String(), nats.Token(token), nats.MaxReconnects(0), nats.Timeout(5*time.Second))
	if err == nil {
		nc.Close()
		t.Fatal("a second connection with the token was taken")
	}
}
