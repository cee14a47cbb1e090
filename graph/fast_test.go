package graph

import (
	"bytes"
	"encoding/json"
	"maps"
	"math/rand/v2"
	"slices"
	"strings"
	"testing"

	"github.com/99designs/gqlgen/graphql"
	"github.com/vektah/gqlparser/v2/ast"
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

// TestDeriveFastSchema: the tables FastReads reads from the schema follow
// it: an interface added to a type is a type condition it satisfies, a
// field whose only argument is lang is parsed as one, and a name in
// FastReadsHandsOn that the schema lacks is refused.
func TestDeriveFastSchema(t *testing.T) {
	s := NewExecutableSchema(Config{}).Schema()
	fs, err := deriveFastSchema(s)
	if err != nil {
		t.Fatal(err)
	}
	if got := fs.satisfies["Incident"]; !slices.Equal(got, []string{"Incident", "Node"}) {
		t.Errorf("Incident satisfies %v", got)
	}
	if fs.fields["Incident"]["title"] != fieldLang || fs.fields["Incident"]["id"] != fieldWritten || fs.fields["Incident"]["similar"] != fieldHandedOn {
		t.Errorf("Incident's fields: %v", fs.fields["Incident"])
	}

	// A changed schema: Impact becomes a Node, gains a lang field; Incident
	// loses similar.
	impact := *s.Types["Impact"]
	impact.Interfaces = append(slices.Clone(impact.Interfaces), "Node")
	impact.Fields = append(slices.Clone(impact.Fields), &ast.FieldDefinition{Name: "note", Type: ast.NamedType("String", nil),
		Arguments: ast.ArgumentDefinitionList{{Name: "lang", Type: ast.NamedType("Lang", nil)}}})
	incident := *s.Types["Incident"]
	incident.Fields = slices.DeleteFunc(slices.Clone(incident.Fields), func(f *ast.FieldDefinition) bool { return f.Name == "similar" })
	changed := *s
	changed.Types = maps.Clone(s.Types)
	changed.Types["Impact"], changed.Types["Incident"] = &impact, &incident
	if _, err := deriveFastSchema(&changed); err == nil || !strings.Contains(err.Error(), "Incident.similar") {
		t.Errorf("a handed-on field the schema lacks: %v", err)
	}
	changed.Types["Incident"] = s.Types["Incident"]
	fs, err = deriveFastSchema(&changed)
	if err != nil {
		t.Fatal(err)
	}
	if got := fs.satisfies["Impact"]; !slices.Equal(got, []string{"Impact", "Node"}) {
		t.Errorf("Impact satisfies %v", got)
	}
	if fs.fields["Impact"]["note"] != fieldLang {
		t.Errorf("Impact.note is not a lang field")
	}
	fields, _ := FastReadsReach(&changed)
	if !slices.Contains(fields, "Impact.note") {
		t.Errorf("FastReadsReach misses Impact.note")
	}
}
