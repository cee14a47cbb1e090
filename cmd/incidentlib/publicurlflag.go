package main

import (
	"fmt"

	"github.com/incidentlib/incidentlib/server"
	"github.com/incidentlib/incidentlib/server/restapi"
)

// publicURLFlag is serve's --public-url: the library's address as readers
// reach it, which the Atom feed (/feed.atom) makes its links and entry ids
// with. A malformed URL is refused at start-up.
type publicURLFlag struct {
	url *string
}

func addPublicURLFlag(f *flags) *publicURLFlag {
	p := &publicURLFlag{url: f.str("public-url", "",
		"the library's address as readers reach it (such as https://incidents.example.org), for the Atom feed's links and ids; empty: each request's scheme and host")}
	f.checks = append(f.checks, func() error {
		if err := restapi.ValidatePublicURL(*p.url); err != nil {
			return fmt.Errorf("--public-url: %v", err)
		}
		return nil
	})
	return p
}

// config sets cfg.PublicURL.
func (p *publicURLFlag) config(cfg server.Config) server.Config {
	cfg.PublicURL = *p.url
	return cfg
}
