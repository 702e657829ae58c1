package source

import (
	"bytes"
	"errors"
	"strings"

	"github.com/go-json-experiment/json/jsontext"

	"github.com/unstick-dev/unstick/internal/snapshot"
)

// A LIST page of a kind without a typed page decoder (Secrets, CRDs, Plans, Rancher's and
// CAPI's kinds, webhooks, …) is split into its items on the raw JSON, in one pass, and each
// item is handed to the sink as bytes: the dynamic client decoded the whole page into maps
// (validating it first), the reader encoded each item again, and the sink decoded it a
// third time. What no reader needs is dropped while splitting: every item's
// metadata.managedFields, and the schemas of a CRD's versions, which are most of a CRD list
// (megabytes per cluster) and which no check reads.
//
// The split takes only the JSON an API server writes: object names exactly as Kubernetes
// spells them, without escapes, each once. Anything else (a name that differs only in case,
// an escaped name, a duplicate, an item that is not an object) makes splitPage fail, and
// the caller reads the page the general way, which has the rules of encoding/json.

// errOddPage says a page holds JSON the split does not take; the page is read again the
// general way.
var errOddPage = errors.New("page not in the API server's canonical form")

// rawItem is one item of a page: its identity and its bytes, ready for Sink.AddJSON.
type rawItem struct {
	h   snapshot.Header
	raw []byte
}

// splitPage splits a LIST page of apiVersion/kind into its items (see above) and returns
// them with the page's continue token. dropSchemas drops spec.versions[*].schema (CRDs).
func splitPage(data []byte, apiVersion, kind string, dropSchemas bool) (items []rawItem, cont string, err error) {
	dec := jsontext.NewDecoder(bytes.NewReader(data))
	if err := openObject(dec); err != nil {
		return nil, "", err
	}
	for dec.PeekKind() != '}' {
		name, err := memberName(dec, "items", "metadata")
		if err != nil {
			return nil, "", err
		}
		switch name {
		case "items":
			items, err = splitItems(dec, apiVersion, kind, dropSchemas)
		case "metadata":
			cont, err = listContinue(dec)
		default:
			err = dec.SkipValue()
		}
		if err != nil {
			return nil, "", err
		}
	}
	if _, err := dec.ReadToken(); err != nil {
		return nil, "", err
	}
	return items, cont, nil
}

func openObject(dec *jsontext.Decoder) error {
	if dec.PeekKind() != '{' {
		return errOddPage
	}
	_, err := dec.ReadToken()
	return err
}

// memberName reads an object member's name. A name that is escaped, or that equals one of
// known ignoring case without being it, is not what an API server writes: errOddPage.
func memberName(dec *jsontext.Decoder, known ...string) (string, error) {
	raw, err := unescaped(dec)
	if err != nil {
		return "", err
	}
	for _, k := range known {
		if string(raw) == k {
			return k, nil
		}
		if strings.EqualFold(string(raw), k) {
			return "", errOddPage
		}
	}
	return string(raw), nil
}

// listContinue reads a list's metadata, returning its continue token.
func listContinue(dec *jsontext.Decoder) (string, error) {
	if dec.PeekKind() == 'n' {
		return "", dec.SkipValue()
	}
	if err := openObject(dec); err != nil {
		return "", err
	}
	cont := ""
	for dec.PeekKind() != '}' {
		name, err := memberName(dec, "continue")
		if err != nil {
			return "", err
		}
		if name == "continue" {
			if cont, err = plainString(dec); err != nil {
				return "", err
			}
			continue
		}
		if err := dec.SkipValue(); err != nil {
			return "", err
		}
	}
	_, err := dec.ReadToken()
	return cont, err
}

// plainString reads a string without escapes (a name, a namespace, a continue token).
func plainString(dec *jsontext.Decoder) (string, error) {
	if dec.PeekKind() != '"' {
		return "", errOddPage
	}
	raw, err := unescaped(dec)
	return string(raw), err
}

// unescaped reads a string (or an object member's name) and returns its contents, which
// hold no escape: errOddPage otherwise. The bytes are the decoder's until its next read.
func unescaped(dec *jsontext.Decoder) ([]byte, error) {
	v, err := dec.ReadValue()
	if err != nil {
		return nil, err
	}
	raw := v[1 : len(v)-1]
	if bytes.IndexByte(raw, '\\') >= 0 {
		return nil, errOddPage
	}
	return raw, nil
}

func splitItems(dec *jsontext.Decoder, apiVersion, kind string, dropSchemas bool) ([]rawItem, error) {
	if dec.PeekKind() == 'n' {
		return nil, dec.SkipValue()
	}
	if dec.PeekKind() != '[' {
		return nil, errOddPage
	}
	if _, err := dec.ReadToken(); err != nil {
		return nil, err
	}
	var items []rawItem
	for dec.PeekKind() != ']' {
		it, err := copyItem(dec, apiVersion, kind, dropSchemas)
		if err != nil {
			return nil, err
		}
		items = append(items, it)
	}
	_, err := dec.ReadToken()
	return items, err
}

// itemWriter builds one item's bytes.
type itemWriter struct {
	buf   []byte
	first bool
}

func (w *itemWriter) open() { w.buf, w.first = append(w.buf, '{'), true }

func (w *itemWriter) member(name string, value []byte) {
	if !w.first {
		w.buf = append(w.buf, ',')
	}
	w.first = false
	w.buf = append(w.buf, '"')
	w.buf = append(w.buf, name...)
	w.buf = append(w.buf, '"', ':')
	w.buf = append(w.buf, value...)
}

// copyItem copies one item (an object), apiVersion and kind set from the list where the
// item lacks them, as the dynamic client sets them.
func copyItem(dec *jsontext.Decoder, apiVersion, kind string, dropSchemas bool) (rawItem, error) {
	if err := openObject(dec); err != nil {
		return rawItem{}, err
	}
	it := rawItem{h: snapshot.Header{APIVersion: apiVersion, Kind: kind}}
	w := &itemWriter{}
	w.open()
	hasAPIVersion, hasKind, hasMeta := false, false, false
	for dec.PeekKind() != '}' {
		name, err := memberName(dec, "apiVersion", "kind", "metadata", "spec")
		if err != nil {
			return rawItem{}, err
		}
		switch {
		case name == "metadata":
			hasMeta = true
			err = copyMeta(dec, w, &it.h)
		case name == "spec" && dropSchemas:
			err = copySpec(dec, w)
		case name == "apiVersion":
			hasAPIVersion = true
			it.h.APIVersion, err = plainString(dec)
			w.member(name, quoted(it.h.APIVersion))
		case name == "kind":
			hasKind = true
			it.h.Kind, err = plainString(dec)
			w.member(name, quoted(it.h.Kind))
		default:
			err = copyValue(dec, w, name)
		}
		if err != nil {
			return rawItem{}, err
		}
	}
	if _, err := dec.ReadToken(); err != nil {
		return rawItem{}, err
	}
	if !hasMeta || it.h.Metadata.Name == "" {
		return rawItem{}, errOddPage // no name: what the general way reports
	}
	if !hasAPIVersion {
		w.member("apiVersion", quoted(apiVersion))
	}
	if !hasKind {
		w.member("kind", quoted(kind))
	}
	it.raw = append(w.buf, '}')
	return it, nil
}

// quoted is a string the split read without escapes, as JSON.
func quoted(s string) []byte { return []byte(`"` + s + `"`) }

func copyValue(dec *jsontext.Decoder, w *itemWriter, name string) error {
	v, err := dec.ReadValue()
	if err != nil {
		return err
	}
	w.member(name, v)
	return nil
}

// copyObject copies an object member by member; each handles a member itself (true) or
// leaves it to be copied as it is. known are the names each looks for (see memberName).
func copyObject(dec *jsontext.Decoder, known []string, each func(name string, w *itemWriter) (bool, error)) ([]byte, error) {
	if err := openObject(dec); err != nil {
		return nil, err
	}
	w := &itemWriter{}
	w.open()
	for dec.PeekKind() != '}' {
		name, err := memberName(dec, known...)
		if err != nil {
			return nil, err
		}
		handled, err := each(name, w)
		if err == nil && !handled {
			err = copyValue(dec, w, name)
		}
		if err != nil {
			return nil, err
		}
	}
	if _, err := dec.ReadToken(); err != nil {
		return nil, err
	}
	return append(w.buf, '}'), nil
}

// copyMeta copies an item's metadata without its managedFields, noting its name and
// namespace.
func copyMeta(dec *jsontext.Decoder, w *itemWriter, h *snapshot.Header) error {
	meta, err := copyObject(dec, []string{"name", "namespace", "managedFields"}, func(name string, sub *itemWriter) (bool, error) {
		var err error
		switch name {
		case "managedFields":
			err = dec.SkipValue()
		case "name":
			h.Metadata.Name, err = plainString(dec)
			sub.member(name, quoted(h.Metadata.Name))
		case "namespace":
			h.Metadata.Namespace, err = plainString(dec)
			sub.member(name, quoted(h.Metadata.Namespace))
		default:
			return false, nil
		}
		return true, err
	})
	if err == nil {
		w.member("metadata", meta)
	}
	return err
}

// copySpec copies a CRD's spec, its versions without their schemas.
func copySpec(dec *jsontext.Decoder, w *itemWriter) error {
	spec, err := copyObject(dec, []string{"versions"}, func(name string, sub *itemWriter) (bool, error) {
		if name != "versions" {
			return false, nil
		}
		return true, copyVersions(dec, sub)
	})
	if err == nil {
		w.member("spec", spec)
	}
	return err
}

func copyVersions(dec *jsontext.Decoder, w *itemWriter) error {
	if dec.PeekKind() != '[' {
		return errOddPage
	}
	if _, err := dec.ReadToken(); err != nil {
		return err
	}
	arr := []byte{'['}
	for i := 0; dec.PeekKind() != ']'; i++ {
		v, err := copyObject(dec, []string{"schema"}, func(name string, _ *itemWriter) (bool, error) {
			if name != "schema" {
				return false, nil
			}
			return true, dec.SkipValue()
		})
		if err != nil {
			return err
		}
		if i > 0 {
			arr = append(arr, ',')
		}
		arr = append(arr, v...)
	}
	if _, err := dec.ReadToken(); err != nil {
		return err
	}
	w.member("versions", append(arr, ']'))
	return nil
}
