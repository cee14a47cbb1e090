package iljson

import (
	"bufio"
	"bytes"
	"io"
)

// MaxLineBytes is the longest line EachLine reads: a history export's
// line holds one incident with every version of it.
const MaxLineBytes = 256 << 20

// EachLine calls each with every line of r that is not blank, without its
// surrounding white space, and its number from 1; line is valid only until
// each returns. It stops at each's first error and returns it, or returns
// the error of the read (bufio.ErrTooLong for a line over MaxLineBytes).
func EachLine(r io.Reader, each func(n int, line []byte) error) error {
	sc := bufio.NewScanner(r)
	sc.Buffer(make([]byte, 0, 1<<20), MaxLineBytes)
	for n := 1; sc.Scan(); n++ {
		b := bytes.TrimSpace(sc.Bytes())
		if len(b) == 0 {
			continue
		}
		if err := each(n, b); err != nil {
			return err
		}
	}
	return sc.Err()
}
