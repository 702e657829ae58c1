package snapshot

import (
	"bytes"
	"encoding/binary"
	"strings"
	"unicode/utf8"

	jsonv2 "github.com/go-json-experiment/json"
	"github.com/go-json-experiment/json/jsontext"
	jsonv1 "github.com/go-json-experiment/json/v1"
)

// Lists are decoded with the JSON v2 implementation configured with every v1 semantic
// (jsonv1.DefaultOptionsV1: case-insensitive names, duplicate names allowed, invalid UTF-8
// replaced, the same method calls), so that an object decodes exactly as encoding/json
// decodes it, in one pass over the bytes: encoding/json's Unmarshal validates the whole
// input before it decodes, and its Decoder copies each value out before it decodes it.

// Strings shares the strings decoded by one goroutine: the condition types, states and
// timestamps, label values and deployment IDs that tens of thousands of Fleet objects repeat
// are kept once. Not safe for concurrent use; the zero value is ready.
type Strings struct {
	m map[string]string
	// recent holds the last string seen of each quickHash: the few strings most objects
	// repeat (condition types, states, timestamps) are found there without hashing them
	// whole or reaching into the map, which outgrows the processor's caches.
	recent *[recentSize]string
	// opts are the decode options reading through this table (decodeOptions), built once.
	opts jsonv2.Options
}

const (
	// maxInterned is the longest string shared; longer ones (messages) are rarely repeated.
	maxInterned = 256
	// maxStrings bounds the table, whatever a hostile bundle holds.
	maxStrings = 1 << 20
)

// get returns the shared copy of raw, a JSON string's contents without escapes.
func (s *Strings) get(raw []byte) string {
	if s == nil || len(raw) > maxInterned {
		return string(raw)
	}
	if s.recent == nil {
		s.recent = new([recentSize]string)
	}
	slot := &s.recent[quickHash(raw)]
	if *slot == string(raw) && len(raw) > 0 {
		return *slot
	}
	v, ok := s.m[string(raw)]
	if !ok {
		v = string(raw)
		if s.m == nil {
			s.m = make(map[string]string, 1<<14)
		}
		if len(s.m) < maxStrings {
			s.m[v] = v
		}
	}
	*slot = v
	return v
}

// recentSize is the number of slots of Strings.recent: a power of two.
const recentSize = 1 << recentBits

const recentBits = 10

// quickHash is a slot of Strings.recent for b, from its length and three words of it (its
// start, middle and end): cheap, and enough to tell apart the strings Fleet repeats.
func quickHash(b []byte) uint64 {
	n := len(b)
	x := uint64(n)
	if n >= 8 {
		x ^= binary.LittleEndian.Uint64(b) ^ binary.LittleEndian.Uint64(b[n/2-4:])*0x9e3779b97f4a7c15 ^ binary.LittleEndian.Uint64(b[n-8:])*0xc2b2ae3d27d4eb4f
	} else {
		for _, c := range b {
			x = x<<8 | uint64(c)
		}
	}
	return (x * 0x9e3779b97f4a7c15) >> (64 - recentBits)
}

// decodeOptions are the options of one List's decode: v1 semantics, and, with a table,
// strings and kept labels read through it.
func decodeOptions(strs *Strings) jsonv2.Options {
	if strs == nil {
		return jsonv1.DefaultOptionsV1()
	}
	if strs.opts == nil {
		strs.opts = tableOptions(strs)
	}
	return strs.opts
}

func tableOptions(strs *Strings) jsonv2.Options {
	return jsonv2.JoinOptions(jsonv1.DefaultOptionsV1(), jsonv2.WithUnmarshalers(jsonv2.JoinUnmarshalers(
		jsonv2.UnmarshalFromFunc(func(dec *jsontext.Decoder, s *string) error { return readString(dec, s, strs) }),
		jsonv2.UnmarshalFromFunc(func(dec *jsontext.Decoder, l *Labels) error { return readLabels(dec, l, strs) }),
		jsonv2.UnmarshalFromFunc(func(dec *jsontext.Decoder, m *Meta) error { return readMeta(dec, m, strs) }),
	)))
}

// readString decodes a plain JSON string (no escapes, valid UTF-8) through the table; any
// other value is decoded the default way.
func readString[S ~string](dec *jsontext.Decoder, s *S, strs *Strings) error {
	if dec.PeekKind() != '"' {
		return jsonv2.SkipFunc // null, or the wrong type: v1's rules apply
	}
	v, err := dec.ReadValue()
	if err != nil {
		return err
	}
	raw := v[1 : len(v)-1]
	if bytes.IndexByte(raw, '\\') >= 0 || !utf8.Valid(raw) {
		return unmarshalString(v, s)
	}
	*s = S(strs.get(raw))
	return nil
}

// unmarshalString decodes v into *s under v1's rules. The copy keeps s from escaping, so
// that a caller's local string is not moved to the heap for the rare escaped string.
func unmarshalString[S ~string](v jsontext.Value, s *S) error {
	t := *s
	err := jsonv2.Unmarshal(v, &t, jsonv1.DefaultOptionsV1())
	*s = t
	return err
}

// readField decodes one string field, through the table when strs is not nil.
func readField[S ~string](dec *jsontext.Decoder, s *S, strs *Strings) error {
	err := readString(dec, s, strs)
	if err == jsonv2.SkipFunc {
		return decodeString(dec, s)
	}
	return err
}

// decodeString decodes the next value of dec into *s under v1's rules (see unmarshalString).
func decodeString[S ~string](dec *jsontext.Decoder, s *S) error {
	t := *s
	err := jsonv2.UnmarshalDecode(dec, &t, jsonv1.DefaultOptionsV1())
	*s = t
	return err
}

// metaFields are the JSON names of Meta's fields.
var metaFields = [...]string{"name", "namespace", "uid", "resourceVersion", "labels", "deletionTimestamp"}

// readMeta decodes a slim object's metadata field by field, skipping what Meta does not
// keep. The namespace and labels go through the table; the name, UID and resource version,
// which no two objects share, do not. A name matches a field as encoding/json matches it:
// exactly, else ignoring case.
func readMeta(dec *jsontext.Decoder, m *Meta, strs *Strings) error {
	if dec.PeekKind() != '{' {
		return jsonv2.SkipFunc // null, or the wrong type: v1's rules apply
	}
	if _, err := dec.ReadToken(); err != nil {
		return err
	}
	for dec.PeekKind() != '}' {
		k, err := dec.ReadToken()
		if err != nil {
			return err
		}
		if err := readMetaField(dec, m, metaField(k.String()), strs); err != nil {
			return err
		}
	}
	_, err := dec.ReadToken()
	return err
}

// metaField is the position in metaFields of a JSON name, or -1.
func metaField(name string) int {
	for i, f := range metaFields {
		if name == f {
			return i
		}
	}
	for i, f := range metaFields {
		if strings.EqualFold(name, f) {
			return i
		}
	}
	return -1
}

func readMetaField(dec *jsontext.Decoder, m *Meta, field int, strs *Strings) error {
	switch field {
	case 0:
		return readField(dec, &m.Name, nil)
	case 1:
		return readField(dec, &m.Namespace, strs)
	case 2:
		return readField(dec, &m.UID, nil)
	case 3:
		return readField(dec, &m.ResourceVersion, nil)
	case 4:
		return readLabels(dec, &m.Labels, strs)
	case 5:
		return jsonv2.UnmarshalDecode(dec, &m.DeletionTimestamp, jsonv1.DefaultOptionsV1())
	}
	return dec.SkipValue()
}

// UnmarshalJSONFrom reads a labels map as UnmarshalJSON does, without decoding the labels
// that are not kept.
func (l *Labels) UnmarshalJSONFrom(dec *jsontext.Decoder) error {
	return readLabels(dec, l, nil)
}

// readLabels reads a labels map, keeping the labels unstick reads (keptLabels), in their
// order; a label given twice keeps its last value, as a map does.
func readLabels(dec *jsontext.Decoder, l *Labels, strs *Strings) error {
	if dec.PeekKind() != '{' {
		var m map[string]string // null, or the wrong type: v1's rules apply
		if err := jsonv2.UnmarshalDecode(dec, &m, jsonv1.DefaultOptionsV1()); err != nil {
			return err
		}
		return l.keep(m)
	}
	if _, err := dec.ReadToken(); err != nil {
		return err
	}
	var vals [len(keptLabels)]string
	var seen [len(keptLabels)]bool
	for dec.PeekKind() != '}' {
		k, err := dec.ReadValue()
		if err != nil {
			return err
		}
		i := keptIndex(k)
		if i < 0 {
			if err := dec.SkipValue(); err != nil {
				return err
			}
			continue
		}
		if err := readString(dec, &vals[i], strs); err == jsonv2.SkipFunc {
			var v string // null or not a string: what a map[string]string makes of it
			if err := jsonv2.UnmarshalDecode(dec, &v, jsonv1.DefaultOptionsV1()); err != nil {
				return err
			}
			vals[i] = v
		} else if err != nil {
			return err
		}
		seen[i] = true
	}
	if _, err := dec.ReadToken(); err != nil {
		return err
	}
	n := 0
	for _, ok := range seen {
		if ok {
			n++
		}
	}
	*l = nil
	if n > 0 {
		*l = make(Labels, 0, n)
	}
	for i, k := range keptLabels {
		if seen[i] {
			*l = append(*l, Label{k, vals[i]})
		}
	}
	return nil
}

// keptIndex is the position in keptLabels of a JSON object name (quoted, as read), or -1.
func keptIndex(name jsontext.Value) int {
	raw := name[1 : len(name)-1]
	for i, k := range keptLabels {
		if string(raw) == k {
			return i
		}
	}
	if bytes.IndexByte(raw, '\\') < 0 {
		return -1
	}
	var s string // an escaped name: compare what it says
	if jsonv2.Unmarshal(name, &s, jsonv1.DefaultOptionsV1()) != nil {
		return -1
	}
	for i, k := range keptLabels {
		if s == k {
			return i
		}
	}
	return -1
}
