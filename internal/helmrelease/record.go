package helmrelease

import (
	"bytes"
	"compress/gzip"
	"encoding/base64"
	"encoding/json"
	"fmt"

	"helm.sh/helm/v3/pkg/release"
)

// Writing a record without loss. unstick changes release records through Helm v3's storage,
// which encodes Helm v3's release type: a field that type does not know is dropped. Helm 4
// records carry such fields (apply_method, which decides whether the next `helm upgrade`
// applies server-side; the chart's modtime and schemamodtime; each chart file's modtime), and
// later versions may add more. Carry lays what Helm's driver wrote over the record it was
// derived from, so the fields unstick did not change keep their stored JSON byte for byte.

// Payload returns the JSON of a stored release record (Helm's base64(gzip(json)), decoded as
// Decode does). It holds the whole decompressed record: for the executor, which writes one
// record at a time, not for the loaders.
func Payload(data []byte) ([]byte, error) {
	var out []byte
	err := withPayload(data, func(b []byte) error {
		out = bytes.Clone(b)
		return nil
	})
	return out, err
}

// Encode is Helm's stored form of a record's JSON: base64 of the JSON gzipped at best
// compression, as Helm's storage drivers write it (v3 and v4 alike).
func Encode(record []byte) ([]byte, error) {
	var buf bytes.Buffer
	zw, err := gzip.NewWriterLevel(&buf, gzip.BestCompression)
	if err != nil {
		return nil, err
	}
	if _, err := zw.Write(record); err != nil {
		return nil, err
	}
	if err := zw.Close(); err != nil {
		return nil, err
	}
	out := make([]byte, base64.StdEncoding.EncodedLen(buf.Len()))
	base64.StdEncoding.Encode(out, buf.Bytes())
	return out, nil
}

// Carry returns, in Helm's stored form, the record written (as Helm v3's storage driver encoded
// it) laid over orig, the stored record it was derived from (the same revision for a status
// or manifest update, the revision rolled back to for a rollback's new revision). Whatever the
// write changed from Helm v3's reading of orig is taken from written; every other field, at
// every level, keeps orig's JSON, including the fields Helm v3 does not know. The result must
// read, through Helm v3's type, exactly as written does, or Carry refuses it.
func Carry(orig, written []byte) ([]byte, error) {
	from, err := Payload(orig)
	if err != nil {
		return nil, fmt.Errorf("the stored record: %w", err)
	}
	next, err := Payload(written)
	if err != nil {
		return nil, fmt.Errorf("the record to write: %w", err)
	}
	base, err := v3JSON(from)
	if err != nil {
		return nil, fmt.Errorf("the stored record: %w", err)
	}
	merged := overlay(from, base, next)
	again, err := v3JSON(merged)
	if err != nil || !bytes.Equal(again, next) {
		return nil, fmt.Errorf("the record cannot keep the fields Helm v3 does not know and still read as the record to write")
	}
	return Encode(merged)
}

// v3JSON is a record as Helm v3's storage driver reads and writes it again.
func v3JSON(record []byte) ([]byte, error) {
	var r release.Release
	if err := json.Unmarshal(record, &r); err != nil {
		return nil, fmt.Errorf("release payload: JSON: %w", err)
	}
	return json.Marshal(&r)
}

// member is one name and value of a JSON object, the value as it is stored.
type member struct {
	key   string
	value json.RawMessage
}

// overlay applies to orig the change from base to next, three JSON values where base is a
// typed reading of orig and next the same typed value after a change. A value next leaves as
// base has it keeps orig's bytes; a changed member of an object that is an object in all three
// is overlaid member by member; any other change takes next's value, and a member next no
// longer has goes. Members base does not know (absent from base and next) stay, in orig's
// order.
func overlay(orig, base, next json.RawMessage) json.RawMessage {
	if bytes.Equal(base, next) {
		return orig
	}
	om, ok1 := members(orig)
	bm, ok2 := members(base)
	nm, ok3 := members(next)
	if !ok1 || !ok2 || !ok3 {
		return next
	}
	bv, nv := byKey(bm), byKey(nm)
	out := make([]member, 0, len(om)+len(nm))
	seen := map[string]bool{}
	for _, m := range om {
		seen[m.key] = true
		b, inBase := bv[m.key]
		n, inNext := nv[m.key]
		switch {
		case !inBase && !inNext: // not Helm v3's, or left empty: as stored
		case !inNext: // the write removed it
			continue
		case !inBase:
			m.value = n
		default:
			m.value = overlay(m.value, b, n)
		}
		out = append(out, m)
	}
	for _, m := range nm {
		if b, inBase := bv[m.key]; !seen[m.key] && (!inBase || !bytes.Equal(b, m.value)) {
			out = append(out, m)
		}
	}
	return encodeMembers(out)
}

// members splits a JSON object into its members in stored order; false when v is not an
// object.
func members(v json.RawMessage) ([]member, bool) {
	dec := json.NewDecoder(bytes.NewReader(v))
	if t, err := dec.Token(); err != nil || t != json.Delim('{') {
		return nil, false
	}
	var out []member
	for dec.More() {
		t, err := dec.Token()
		key, ok := t.(string)
		if err != nil || !ok {
			return nil, false
		}
		var value json.RawMessage
		if err := dec.Decode(&value); err != nil {
			return nil, false
		}
		out = append(out, member{key, value})
	}
	if t, err := dec.Token(); err != nil || t != json.Delim('}') {
		return nil, false
	}
	return out, true
}

// byKey indexes members by name; of a name stored twice the last counts, as encoding/json
// reads it.
func byKey(ms []member) map[string]json.RawMessage {
	out := make(map[string]json.RawMessage, len(ms))
	for _, m := range ms {
		out[m.key] = m.value
	}
	return out
}

func encodeMembers(ms []member) json.RawMessage {
	var buf bytes.Buffer
	buf.WriteByte('{')
	for i, m := range ms {
		if i > 0 {
			buf.WriteByte(',')
		}
		k, _ := json.Marshal(m.key)
		buf.Write(k)
		buf.WriteByte(':')
		buf.Write(m.value)
	}
	buf.WriteByte('}')
	return buf.Bytes()
}
