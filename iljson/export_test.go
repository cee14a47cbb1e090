package iljson

import (
	"encoding/json"
	"reflect"
)

// DecodeBothWays decodes data into a with the one-pass decoder and into b
// with encoding/json's path, for tests that compare them: ok says whether
// the one-pass decoder read it, err is encoding/json's error. T is a
// record type whose UnmarshalJSON is Unmarshal.
func DecodeBothWays[T any](data []byte, a, b *T) (ok bool, err error) {
	// The first decode of a T registers its one-pass decoder.
	var first T
	_ = any(&first).(json.Unmarshaler).UnmarshalJSON([]byte("{}"))
	dec, found := extraDecoders.Load(reflect.TypeFor[T]())
	if !found {
		panic("no one-pass decoder for " + reflect.TypeFor[T]().String())
	}
	ok = decodeOnePass(data, a, dec.(valueDecoder))
	onePass = false
	defer func() { onePass = true }()
	return ok, any(b).(json.Unmarshaler).UnmarshalJSON(data)
}

// EncodeBothWays writes v with the one-pass encoder and with encoding/json
// alone (MarshalJSON called directly, and json.Marshal), for tests that
// compare them.
func EncodeBothWays(v any) (onePassDirect, onePassMarshal, jsonDirect, jsonMarshal []byte, err error) {
	m := v.(json.Marshaler)
	if onePassDirect, err = m.MarshalJSON(); err != nil {
		return
	}
	if onePassMarshal, err = json.Marshal(v); err != nil {
		return
	}
	onePass = false
	defer func() { onePass = true }()
	if jsonDirect, err = m.MarshalJSON(); err != nil {
		return
	}
	jsonMarshal, err = json.Marshal(v)
	return
}
