package main

import (
	"context"
	"path/filepath"
	"runtime/debug"
	"strings"
	"testing"
	"time"

	"github.com/incidentlib/incidentlib/server"
)

func TestGCPercentNonsenseRefused(t *testing.T) {
	for name, c := range map[string]struct {
		args []string
		env  map[string]string
	}{
		"BelowMinimum": {[]string{"serve", "--gc-percent", "5"}, nil},
		"Off":          {[]string{"serve", "--gc-percent", "-1"}, nil},
		"AboveMaximum": {[]string{"serve", "--gc-percent", "20000"}, nil},
		"NotANumber":   {[]string{"serve", "--gc-percent", "400%"}, nil},
		"EnvBelow":     {[]string{"serve"}, map[string]string{"INCIDENTLIB_GC_PERCENT": "0"}},
	} {
		t.Run(name, func(t *testing.T) {
			_, stderr, err := runCmd(t, c.env, "", append(c.args, "--db", filepath.Join(t.TempDir(), "il.db"))...)
			if err == nil {
				t.Fatal("accepted")
			}
			if !strings.Contains(err.Error()+stderr, "gc-percent") && !strings.Contains(err.Error()+stderr, "GC_PERCENT") {
				t.Fatalf("the error must name the flag: %v %s", err, stderr)
			}
		})
	}
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
		addr := freeAddr(t)
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
