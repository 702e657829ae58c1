package snapshot

import (
	"reflect"
	"unique"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// Intern makes every string of the object share one copy with the equal strings of every
// other interned object: the label keys and values, namespaces, condition types, states and
// timestamps, deployment IDs that tens of thousands of Fleet objects repeat. It is for
// sources that keep objects for long (serve's caches), where it cuts the resident set by a
// third; a one-off scan does not pay for the walk. Interned strings are held weakly
// (package unique), so strings of deleted objects do not stay behind.
func (o *Object) Intern() {
	internValue(reflect.ValueOf(o.obj))
	if o.helm != nil {
		internValue(reflect.ValueOf(o.helm))
	}
	o.Namespace = intern(o.Namespace)
	o.APIVersion, o.Kind = intern(o.APIVersion), intern(o.Kind)
}

func intern(s string) string {
	if s == "" {
		return s
	}
	return unique.Make(s).Value()
}

var (
	stringMapType  = reflect.TypeFor[map[string]string]()
	objectMetaType = reflect.TypeFor[metav1.ObjectMeta]()
	// uniquePerObject are the ObjectMeta strings no two objects share: interning them would
	// only add an entry to the intern table for each.
	uniquePerObject = map[string]bool{"Name": true, "UID": true, "ResourceVersion": true}
)

func internValue(v reflect.Value) {
	switch v.Kind() {
	case reflect.Pointer, reflect.Interface:
		if !v.IsNil() {
			internValue(v.Elem())
		}
	case reflect.Struct:
		meta := v.Type() == objectMetaType
		for i := range v.NumField() {
			if f := v.Field(i); f.CanSet() && !(meta && uniquePerObject[v.Type().Field(i).Name]) {
				internValue(f)
			}
		}
	case reflect.Slice:
		if v.Type().Elem().Kind() == reflect.Uint8 {
			return // bytes: payloads, never shared
		}
		for i := range v.Len() {
			internValue(v.Index(i))
		}
	case reflect.Array:
		for i := range v.Len() {
			internValue(v.Index(i))
		}
	case reflect.Map:
		if v.IsNil() || !v.CanSet() {
			return
		}
		if v.Type() == stringMapType {
			m := v.Interface().(map[string]string)
			out := make(map[string]string, len(m))
			for k, s := range m {
				out[intern(k)] = intern(s)
			}
			v.Set(reflect.ValueOf(out))
			return
		}
		// Other maps (rare in the kinds kept): values are walked when addressable copies
		// can be written back.
		it := v.MapRange()
		for it.Next() {
			val := reflect.New(it.Value().Type()).Elem()
			val.Set(it.Value())
			internValue(val)
			v.SetMapIndex(it.Key(), val)
		}
	case reflect.String:
		if v.CanSet() {
			v.SetString(intern(v.String()))
		}
	}
}
