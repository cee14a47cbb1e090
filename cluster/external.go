package cluster

import (
	"errors"
	"fmt"
	"net"
	"os"

	"github.com/nats-io/nats.go"
)

// checkExternal connects once to an existing NATS cluster (Config.URL),
// without retrying, so that credentials the servers refuse, or a creds
// file that is missing or not one, stop the node at start with an error
// naming the file. Servers that cannot be reached now do not: the node
// starts, keeps trying and serves its store, stale, meanwhile.
func checkExternal(cfg Config) error {
	if cfg.CredsFile != "" {
		if _, err := os.ReadFile(cfg.CredsFile); err != nil {
			return fmt.Errorf("cluster: --nats-creds %s: %v", cfg.CredsFile, err)
		}
	}
	opts := []nats.Option{nats.Name(cfg.NodeName), nats.NoReconnect(), nats.Timeout(cfg.WriteTimeout)}
	if cfg.CredsFile != "" {
		opts = append(opts, nats.UserCredentials(cfg.CredsFile))
	}
	nc, err := nats.Connect(cfg.URL, opts...)
	if err == nil {
		nc.Close()
		return nil
	}
	var netErr net.Error
	if errors.Is(err, nats.ErrNoServers) || errors.As(err, &netErr) {
		cfg.Logger.Warn("the NATS servers of --nats cannot be reached now: this node keeps trying", "url", cfg.URL, "err", err)
		return nil
	}
	refused := errors.Is(err, nats.ErrAuthorization) || errors.Is(err, nats.ErrAuthExpired) ||
		errors.Is(err, nats.ErrAuthRevoked) || errors.Is(err, nats.ErrAccountAuthExpired)
	switch {
	case cfg.CredsFile == "":
		return fmt.Errorf("cluster: --nats %s refused this node (give its credentials with --nats-creds): %v", cfg.URL, err)
	case refused:
		return fmt.Errorf("cluster: --nats-creds %s: the NATS servers of --nats refused these credentials: %v", cfg.CredsFile, err)
	}
	return fmt.Errorf("cluster: --nats-creds %s: not a usable NATS credentials file (a user JWT and its nkey seed): %v", cfg.CredsFile, err)
}
