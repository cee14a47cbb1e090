package main

import (
	"context"
	"io"
	"strings"
	"testing"
)

// The cluster benchmark refuses bad flags before it starts a cluster.
func TestClusterBenchRefusesBadFlags(t *testing.T) {
	for _, args := range [][]string{
		{"-parts", "reads,bogus"},
		{"-tail", "0"},
		{"-incidents", "10"},
		{"-count", "10"},
	} {
		if err := run(context.Background(), append([]string{"cluster"}, args...), io.Discard); err == nil {
			t.Errorf("cluster %s: accepted", strings.Join(args, " "))
		}
	}
}
