package report

import (
	"reflect"

	"github.com/unstick-dev/unstick/internal/textsafe"
)

// Every string of a report may come from the input (object names, event messages, log
// lines, Helm descriptions, file names), and the input is untrusted: a terminal must not act
// on its escape sequences, XML must stay well-formed, and text quoted from the input must not
// start a line of its own — a Helm description holding "\n    next safe step" would
// otherwise print advice that looks like unstick's. The renderers therefore print a copy of
// the report with every string on one line, its line breaks shown as ⏎ (textsafe.Line). JSON
// alone escapes control characters itself and keeps the data as read.

// printable returns a deep copy of r with every string made safe to print.
func (r *Report) printable() *Report {
	v := reflect.ValueOf(r).Elem()
	out := reflect.New(v.Type()).Elem()
	copyClean(out, v)
	return out.Addr().Interface().(*Report)
}

// copyClean copies src into dst (both of one type), cleaning strings on the way. Only the
// shapes a report holds are handled: structs, pointers, slices, maps and scalars.
func copyClean(dst, src reflect.Value) {
	switch src.Kind() {
	case reflect.String:
		dst.SetString(textsafe.Line(src.String()))
	case reflect.Struct:
		t := src.Type()
		for i := 0; i < t.NumField(); i++ {
			if !t.Field(i).IsExported() {
				// A value with unexported state (time.Time) holds no input text.
				dst.Set(src)
				return
			}
		}
		for i := 0; i < t.NumField(); i++ {
			copyClean(dst.Field(i), src.Field(i))
		}
	case reflect.Pointer:
		if src.IsNil() {
			return
		}
		p := reflect.New(src.Elem().Type())
		copyClean(p.Elem(), src.Elem())
		dst.Set(p)
	case reflect.Slice:
		if src.IsNil() {
			return
		}
		s := reflect.MakeSlice(src.Type(), src.Len(), src.Len())
		for i := 0; i < src.Len(); i++ {
			copyClean(s.Index(i), src.Index(i))
		}
		dst.Set(s)
	case reflect.Map:
		if src.IsNil() {
			return
		}
		m := reflect.MakeMapWithSize(src.Type(), src.Len())
		it := src.MapRange()
		for it.Next() {
			k := reflect.New(src.Type().Key()).Elem()
			copyClean(k, it.Key())
			e := reflect.New(src.Type().Elem()).Elem()
			copyClean(e, it.Value())
			m.SetMapIndex(k, e)
		}
		dst.Set(m)
	case reflect.Interface:
		if src.IsNil() {
			return
		}
		e := reflect.New(src.Elem().Type()).Elem()
		copyClean(e, src.Elem())
		dst.Set(e)
	default:
		dst.Set(src)
	}
}
