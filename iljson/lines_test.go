package iljson_test

import (
	"errors"
	"strings"
	"testing"

	"github.com/incidentlib/incidentlib/iljson"
)

// EachLine gives the lines that are not blank, trimmed, numbered as the
// file numbers them, and stops at the first error of its callback.
func TestEachLine(t *testing.T) {
	var got []string
	err := iljson.EachLine(strings.NewReader("  {\"a\":1}  \n\n \t\n{\"b\":2}\r\n{\"c\":3}"), func(n int, b []byte) error {
		got = append(got, strings.Repeat("#", n)+string(b))
		return nil
	})
	if want := []string{`#{"a":1}`, `####{"b":2}`, `#####{"c":3}`}; err != nil || strings.Join(got, "|") != strings.Join(want, "|") {
		t.Fatalf("lines %q, %v; want %q", got, err, want)
	}
	stop := errors.New("stop")
	calls := 0
	err = iljson.EachLine(strings.NewReader("1\n2\n3\n"), func(int, []byte) error { calls++; return stop })
	if !errors.Is(err, stop) || calls != 1 {
		t.Fatalf("after an error: %v, %d calls", err, calls)
	}
}
