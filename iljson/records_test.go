package iljson_test

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"testing"

	"github.com/incidentlib/incidentlib/iljson"
)

func TestCheckDuplicateKeys(t *testing.T) {
	for name, c := range map[string]struct {
		data, key, path string
		offset          int64
	}{
		"Top":         {`{"id":"a","id":"b"}`, "id", "", 10},
		"Nested":      {`{"title":{"en":"a", "en":"b"}}`, "en", ".title", 20},
		"InAnArray":   {`{"sources":[{"url":"a"},{"url":"a","url":"b"}]}`, "url", ".sources[1]", 35},
		"AfterScalar": {`[1,"x",{"k":1,"k":2}]`, "k", "[2]", 14},
	} {
		t.Run(name, func(t *testing.T) {
			var de *iljson.DuplicateKeyError
			if err := iljson.CheckDuplicateKeys([]byte(c.data)); !errors.As(err, &de) {
				t.Fatalf("want a DuplicateKeyError, got %v", err)
			}
			if de.Key != c.key || de.Path != c.path || de.Offset != c.offset {
				t.Fatalf("got %q at %q offset %d, want %q at %q offset %d", de.Key, de.Path, de.Offset, c.key, c.path, c.offset)
			}
		})
	}
	for name, data := range map[string]string{"Clean": `{"a":{"a":1},"b":[{"a":1},{"a":2}]}`, "Empty": ``, "OnlyTheFirstValue": `{"a":1} {"a":1,"a":2}`} {
		t.Run(name, func(t *testing.T) {
			if err := iljson.CheckDuplicateKeys([]byte(data)); err != nil {
				t.Fatal(err)
			}
		})
	}
	t.Run("ErrTruncated", func(t *testing.T) {
		var je *iljson.JSONError
		if err := iljson.CheckDuplicateKeys([]byte(`{"a":1`)); !errors.As(err, &je) || je.Offset != 6 {
			t.Fatalf("want a JSONError at the end, got %v", err)
		}
	})
}

func TestSplitRecords(t *testing.T) {
	for name, c := range map[string]struct {
		data  string
		lines bool
		form  iljson.RecordsForm
		where []string // line:index of each record
		err   error
	}{
		"Object":         {"\n  {\"a\": 1}\n", false, iljson.FormObject, []string{"2:-1"}, nil},
		"Array":          {"[\n{\"a\":1},\n  {\"a\":2}]", false, iljson.FormArray, []string{"2:0", "3:1"}, nil},
		"Lines":          {"{\"a\":1}\n\n {\"a\":2}\n", false, iljson.FormLines, []string{"1:-1", "3:-1"}, nil},
		"LinesByFlag":    {"{\"a\":1}", true, iljson.FormLines, []string{"1:-1"}, nil},
		"BrokenFirst":    {"{\"a\": x}\n{\"a\":2}\n", false, iljson.FormLines, []string{"1:-1", "2:-1"}, nil},
		"ErrEmptyArray":  {"[ ]", false, iljson.FormArray, nil, iljson.ErrNoRecords},
		"ErrTrailing":    {"[{\"a\":1}] x", false, iljson.FormArray, []string{"1:0"}, iljson.ErrTrailingData},
		"ErrNoLines":     {"\n\n", true, iljson.FormLines, nil, iljson.ErrNoRecords},
		"ErrBrokenArray": {"[{\"a\":1}, {\"a\" 2}]", false, iljson.FormArray, []string{"1:0"}, nil},
	} {
		t.Run(name, func(t *testing.T) {
			var where []string
			form, err := iljson.SplitRecords([]byte(c.data), c.lines, func(r iljson.RawRecord) {
				if !bytes.HasPrefix(r.JSON, []byte("{")) || !bytes.HasPrefix([]byte(c.data[r.Offset:]), r.JSON) {
					t.Errorf("record %q at offset %d", r.JSON, r.Offset)
				}
				where = append(where, fmt.Sprintf("%d:%d", r.Line, r.Index))
			})
			if form != c.form || strings.Join(where, " ") != strings.Join(c.where, " ") {
				t.Errorf("form %d records %v, want %d %v", form, where, c.form, c.where)
			}
			var se *iljson.SplitError
			switch {
			case name == "ErrBrokenArray":
				if !errors.As(err, &se) || se.Offset != 14 {
					t.Errorf("want a SplitError at the break, got %v", err)
				}
			case c.err == nil && err != nil:
				t.Errorf("error %v", err)
			case c.err != nil && !errors.Is(err, c.err):
				t.Errorf("error %v, want %v", err, c.err)
			}
		})
	}
}

// TestMayRepeatKeys: the quick scan never passes what CheckDuplicateKeys
// refuses.
func TestMayRepeatKeys(t *testing.T) {
	for _, s := range []string{
		`{"a":1,"b":{"a":1,"b":2},"c":[{"a":1},{"a":1}]}`,
		`{"a":1,"a":2}`,
		`{"a":{"x":1,"x":2}}`,
		`{"a":[{"x":1,"x":2}]}`,
		`{"a":"\"a\":1","b":"}{","c":1}`,
		`{"t\u0069tle":1,"title":2}`,
		`{"a":[1,{"b":[{"c":1,"d":"x,\"c\":"}]}],"e":{}}`,
	} {
		fast := iljson.MayRepeatKeys([]byte(s))
		full := iljson.CheckDuplicateKeys([]byte(s)) != nil
		if full && !fast {
			t.Errorf("%s: the fast scan passes a duplicate key", s)
		}
		if !full && fast && !strings.Contains(s, `\u`) {
			t.Errorf("%s: the fast scan finds a duplicate that is not there", s)
		}
	}
}

// FuzzFastDuplicateScan: on valid JSON the byte scan finds every
// duplicate name the full check finds.
func FuzzFastDuplicateScan(f *testing.F) {
	f.Add([]byte(`{"a":1,"b":{"a":1,"b":2},"c":[{"a":1},{"a":1}]}`))
	f.Add([]byte(`{"a":[{"x":1,"x":2}]}`))
	f.Add([]byte(strings.Repeat(`{"a":`, 40) + "1" + strings.Repeat(`}`, 40)))
	f.Fuzz(func(t *testing.T, data []byte) {
		if !json.Valid(data) {
			return
		}
		if iljson.CheckDuplicateKeys(data) != nil && !iljson.MayRepeatKeys(data) {
			t.Fatalf("%s: the fast scan passes a duplicate key", data)
		}
	})
}
