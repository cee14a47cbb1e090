package testutil

import (
	"bytes"
	"context"
	"io"
	"strings"
	"testing"
)

// RunFunc is a command's run function, as its main calls it: the
// arguments after the program's name, the environment, standard input,
// output and error.
type RunFunc func(ctx context.Context, args []string, getenv func(string) string, stdin io.Reader, stdout, stderr io.Writer) error

// Refusal is a command line that a command must refuse at start-up.
type Refusal struct {
	Args []string
	Env  map[string]string // the environment; nothing else is set
	// Want holds the words, such as the flag's name, of which the error
	// or standard error must name at least one.
	Want []string
}

// Refuses runs every case through run, as a subtest named by its key,
// and fails it when run returns no error or when neither the error nor
// what the command wrote to standard error names one of its Want.
func Refuses(t *testing.T, run RunFunc, cases map[string]Refusal) {
	t.Helper()
	for name, c := range cases {
		t.Run(name, func(t *testing.T) {
			var stdout, stderr bytes.Buffer
			err := run(context.Background(), c.Args, func(k string) string { return c.Env[k] }, strings.NewReader(""), &stdout, &stderr)
			if err == nil {
				t.Fatal("accepted")
			}
			said := err.Error() + stderr.String()
			for _, w := range c.Want {
				if strings.Contains(said, w) {
					return
				}
			}
			t.Fatalf("the error must name %s: %v %s", strings.Join(c.Want, " or "), err, stderr.String())
		})
	}
}
