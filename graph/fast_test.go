package graph

import (
	"bytes"
	"encoding/json"
	"math/rand/v2"
	"strings"
	"testing"

	"github.com/99designs/gqlgen/graphql"
)

// TestEscapeIn8: the word test finds exactly the bytes str escapes, at
// every position, beside any other bytes (UTF-8 included).
func TestEscapeIn8(t *testing.T) {
	escapes := func(c byte) bool { return c < 0x20 || c == '"' || c == '\\' }
	for _, fill := range []byte{'a', 0x7f, 0x80, 0xff, 0x20, '#', ']'} {
		for c := 0; c < 256; c++ {
			for pos := 0; pos < 8; pos++ {
				b := bytes.Repeat([]byte{fill}, 8)
				b[pos] = byte(c)
				if got, want := escapeIn8(word8(string(b), 0)), escapes(byte(c)) || escapes(fill); got != want {
					t.Fatalf("escapeIn8(%q) = %v, want %v", b, got, want)
				}
			}
		}
	}
	rng := rand.New(rand.NewPCG(1, 2))
	for range 200_000 {
		var b [8]byte
		want := false
		for i := range b {
			b[i] = byte(rng.IntN(256))
			want = want || escapes(b[i])
		}
		if got := escapeIn8(word8(string(b[:]), 0)); got != want {
			t.Fatalf("escapeIn8(%q) = %v, want %v", b, got, want)
		}
	}
}

// TestStrEscapes: str writes what gqlgen's string marshaler writes, for
// strings whose bytes to escape fall anywhere in and around whole words.
func TestStrEscapes(t *testing.T) {
	rng := rand.New(rand.NewPCG(3, 4))
	alphabet := []string{"a", "b", "\"", "\\", "\n", "\t", "\r", "\x01", "\x1f", "한", "é", "<", "\u2028", " "}
	for range 20_000 {
		var sb strings.Builder
		for n := rng.IntN(40); n > 0; n-- {
			if rng.IntN(4) == 0 {
				sb.WriteString(alphabet[rng.IntN(len(alphabet))])
			} else {
				sb.WriteString("abcdefgh"[:1+rng.IntN(8)])
			}
		}
		s := sb.String()
		x := &fastExec{}
		x.str(s)
		var back string
		if err := json.Unmarshal(x.out, &back); err != nil || back != s {
			t.Fatalf("str(%q) wrote %s, which reads back as %q (%v)", s, x.out, back, err)
		}
		var want bytes.Buffer
		graphql.MarshalString(s).MarshalGQL(&want)
		if !bytes.Equal(x.out, want.Bytes()) {
			t.Fatalf("str(%q) = %s, gqlgen writes %s", s, x.out, want.Bytes())
		}
	}
}
