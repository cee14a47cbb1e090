package storage

import (
	"bytes"
	"sort"
)

// What a version changed: the record fields that differ from the
// version before, found by comparing the two records' JSON members.

// changedFields lists the IL-JSON paths whose values differ between two
// records: top-level members, and the members of objects (title.en).
// The version and updated_at members are stamps, not content, and are
// left out. It scans the two texts without decoding them.
func changedFields(a, b []byte) []string {
	x, ok1 := members(a)
	y, ok2 := members(b)
	if !ok1 || !ok2 {
		return nil
	}
	var out []string
	diff(x, y, "", &out)
	sort.Strings(out)
	return out
}

var notContent = map[string]bool{"version": true, "updated_at": true}

// member is one member of a JSON object: its name (without quotes; IL-JSON
// names need no escapes) and its raw value.
type member struct {
	name string
	val  []byte
}

func find(ms []member, name string) []byte {
	for _, m := range ms {
		if m.name == name {
			return m.val
		}
	}
	return nil
}

func diff(x, y []member, prefix string, out *[]string) {
	visit := func(k string, a, b []byte) {
		if prefix == "" && notContent[k] {
			return
		}
		if bytes.Equal(a, b) {
			return
		}
		if prefix == "" && len(a) > 0 && len(b) > 0 && a[0] == '{' && b[0] == '{' {
			ax, ok1 := members(a)
			bx, ok2 := members(b)
			if ok1 && ok2 {
				diff(ax, bx, k+".", out)
				return
			}
		}
		*out = append(*out, prefix+k)
	}
	for _, m := range x {
		visit(m.name, m.val, find(y, m.name))
	}
	for _, m := range y {
		if find(x, m.name) == nil {
			visit(m.name, nil, m.val)
		}
	}
}

// members splits a compact JSON object into its members, without decoding
// their values; ok is false for anything else.
func members(b []byte) (out []member, ok bool) {
	if len(b) < 2 || b[0] != '{' || b[len(b)-1] != '}' {
		return nil, false
	}
	i, end := 1, len(b)-1
	str := func(i int) int { // the end of the string starting at i, past its quote
		for j := i + 1; j < end; j++ {
			switch b[j] {
			case '\\':
				j++
			case '"':
				return j + 1
			}
		}
		return -1
	}
	for i < end {
		if b[i] != '"' {
			return nil, false
		}
		ne := str(i)
		if ne < 0 || ne >= end || b[ne] != ':' {
			return nil, false
		}
		name := string(b[i+1 : ne-1])
		j, depth := ne+1, 0
	value:
		for ; j < end; j++ {
			switch b[j] {
			case '"':
				k := str(j)
				if k < 0 {
					return nil, false
				}
				j = k - 1
			case '{', '[':
				depth++
			case '}', ']':
				depth--
			case ',':
				if depth == 0 {
					break value
				}
			}
		}
		out = append(out, member{name, b[ne+1 : j]})
		i = j + 1
	}
	return out, true
}
