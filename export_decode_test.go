package incidentlib

import "encoding/json"

// DecodeBothWays decodes data into a with the one-pass decoder and into b
// with encoding/json's path, for tests that compare them: ok says whether
// the one-pass decoder read it, err is encoding/json's error.
func DecodeBothWays(data []byte, a, b *Incident) (ok bool, err error) {
	ok = decodeOnePass(data, a, extraDecoderOf(incidentKnown, nullIsError, incidentFromWire))
	onePass = false
	defer func() { onePass = true }()
	return ok, b.UnmarshalJSON(data)
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
