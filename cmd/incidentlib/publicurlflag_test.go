package main

import (
	"testing"

	"github.com/incidentlib/incidentlib/internal/testutil"
)

func TestPublicURLFlagRefused(t *testing.T) {
	testutil.Refuses(t, run, map[string]testutil.Refusal{
		"NotAURL":       {Args: []string{"serve", "--public-url", "http://[::1"}, Want: []string{"--public-url"}},
		"NoScheme":      {Args: []string{"serve", "--public-url", "incidents.example.org"}, Want: []string{"--public-url", "http"}},
		"OtherScheme":   {Args: []string{"serve", "--public-url", "ftp://incidents.example.org"}, Want: []string{"--public-url"}},
		"NoHost":        {Args: []string{"serve", "--public-url", "https://"}, Want: []string{"--public-url", "host"}},
		"WithQuery":     {Args: []string{"serve", "--public-url", "https://example.org/?a=b"}, Want: []string{"--public-url"}},
		"WithUser":      {Args: []string{"serve", "--public-url", "https://me@example.org"}, Want: []string{"--public-url"}},
		"FromTheEnvToo": {Args: []string{"serve"}, Env: map[string]string{"INCIDENTLIB_PUBLIC_URL": "example.org"}, Want: []string{"public-url"}},
	})
}
