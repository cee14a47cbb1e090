package main

import (
	"context"
	"path/filepath"
	"runtime/debug"
	"strings"
	"testing"
	"time"

	"github.com/incidentlib/incidentlib/internal/testutil"
	"github.com/incidentlib/incidentlib/server"
)

func TestGCPercentNonsenseRefused(t *testing.T) {
	db := filepath.Join(t.TempDir(), "il.db")
	want := []string{"gc-percent", "GC_PERCENT"}
	testutil.Refuses(t, run, map[string]testutil.Refusal{
		"BelowMinimum": {Args: []string{"serve", "--gc-percent", "5", "--db", db}, Want: want},
		"Off":          {Args: []string{"serve", "--gc-percent", "-1", "--db", db}, Want: want},
		"AboveMaximum": {Args: []string{"serve", "--gc-percent", "20000", "--db", db}, Want: want},
		"NotANumber":   {Args: []string{"serve", "--gc-percent", "400%", "--db", db}, Want: want},
		"EnvBelow":     {Args: []string{"serve", "--db", db}, Env: map[string]string{"INCIDENTLIB_GC_PERCENT": "0"}, Want: want},
	})
}

// TestGCPercentApplied serves with an explicit budget and reads it back
// from the runtime; without the flag serve sets the default.
func TestGCPercentApplied(t *testing.T) {
	prev := debug.SetGCPercent(100)
	defer debug.SetGCPercent(prev)
	for _, c := range []struct {
		args []string
		env  map[string]string
		want int
	}{
		{[]string{"--gc-percent", "250"}, nil, 250},
		{nil, map[string]string{"INCIDENTLIB_GC_PERCENT": "300"}, 300},
		{nil, nil, server.DefaultGCPercent},
	} {
		debug.SetGCPercent(100)
		addr := testutil.FreeAddr(t)
		ctx, cancel := context.WithCancel(context.Background())
		var stdout, stderr syncBuffer
		done := make(chan error, 1)
		args := append([]string{"serve", "--addr", addr, "--db", filepath.Join(t.TempDir(), "il.db"), "--seed", "none"}, c.args...)
		go func() {
			done <- run(ctx, args, func(k string) string { return c.env[k] }, strings.NewReader(""), &stdout, &stderr)
		}()
		waitHealthy(t, "http://"+addr, done)
		got := debug.SetGCPercent(100)
		cancel()
		select {
		case err := <-done:
			if err != nil {
				t.Fatalf("serve: %v; %s", err, stderr.String())
			}
		case <-time.After(20 * time.Second):
			t.Fatal("serve did not shut down")
		}
		if got != c.want {
			t.Errorf("serve %v %v runs with a GC budget of %d%%, want %d%%", c.args, c.env, got, c.want)
		}
	}
}
