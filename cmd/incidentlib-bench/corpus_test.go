package main

import (
	"bytes"
	"context"
	"regexp"
	"slices"
	"sort"
	"strings"
	"testing"
)

// Every benchmark over a generated store whose -h promises at least 100
// incidents holds that promise through registerCorpusCommand's one check:
// -incidents=99 is refused with the same words before anything runs, and
// -incidents=100 is not refused for it.
func TestEveryCorpusBenchmarkChecksItsCorpus(t *testing.T) {
	atLeast := regexp.MustCompile(`(?s)-incidents int\n[^\n]*\(at least 100\)`)
	var corpora []string
	for name := range benchmarks {
		var out bytes.Buffer
		_ = run(context.Background(), []string{name, "-h"}, &out)
		if atLeast.MatchString(out.String()) {
			corpora = append(corpora, name)
		}
	}
	sort.Strings(corpora)
	for _, want := range []string{"churn", "export", "search", "stats"} {
		if !slices.Contains(corpora, want) {
			t.Fatalf("%s does not offer -incidents (at least 100): corpus benchmarks %v", want, corpora)
		}
	}
	for _, name := range corpora {
		t.Run(name, func(t *testing.T) {
			var out bytes.Buffer
			// With a flag of its own out of range too, so that a missing
			// corpus check fails here rather than running the benchmark.
			err := run(context.Background(), []string{name, "-incidents=99", "-" + ownFlag[name] + "=-1"}, &out)
			if err == nil || err.Error() != "-incidents at least 100" {
				t.Fatalf("-incidents=99: %v, want -incidents at least 100", err)
			}
			// The benchmark's own check comes after the corpus's: a flag of
			// its own out of range is what is refused at 100.
			err = run(context.Background(), []string{name, "-incidents=100", "-" + ownFlag[name] + "=-1"}, &out)
			if err == nil || strings.Contains(err.Error(), "-incidents") {
				t.Fatalf("-incidents=100 -%s=-1: %v, want its own refusal", ownFlag[name], err)
			}
		})
	}
}

// ownFlag is a flag of each corpus benchmark's own that -1 puts out of range.
var ownFlag = map[string]string{"churn": "writes", "export": "record-cache", "search": "clients", "stats": "queries"}
