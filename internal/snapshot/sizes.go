package snapshot

import (
	"encoding/json"
	"sort"
	"strconv"

	fleetv1 "github.com/rancher/fleet/pkg/apis/fleet.cattle.io/v1alpha1"
)

// SizesAnnotation carries, on an object `collect` reduced (a Bundle without its resources, a
// Helm release Secret without its record), the sizes measured before the reduction, as JSON
// ObjectSize: size checks then judge a collected bundle as they judge the live cluster. Only
// numbers and resource names; never a payload.
const SizesAnnotation = "unstick.dev/sizes"

// maxSizedResources bounds the resources an ObjectSize names: the largest are what a user
// moves out or ignores.
const maxSizedResources = 10

// ObjectSize is what an object weighs where the API server and etcd count it.
type ObjectSize struct {
	// Bytes is the stored payload: a Bundle's resources (as stored, encoded) plus its status;
	// a Secret's data values (what the API's 1 MiB validation counts).
	Bytes int `json:"bytes"`
	// StatusBytes is a Bundle's status as JSON: it grows with the clusters it targets.
	StatusBytes int `json:"statusBytes,omitempty"`
	// Resources are a Bundle's largest resources (spec.resources[] by name), largest first.
	Resources []ResourceSize `json:"resources,omitempty"`
}

// ResourceSize is one Bundle resource's stored size.
type ResourceSize struct {
	Name  string `json:"name"`
	Bytes int    `json:"bytes"`
}

// MeasureBundle weighs a Bundle as read, before its resources are dropped.
func MeasureBundle(b *fleetv1.Bundle) ObjectSize {
	var s ObjectSize
	for _, r := range b.Spec.Resources {
		n := len(r.Content) + len(r.Name)
		s.Bytes += n
		s.Resources = append(s.Resources, ResourceSize{Name: r.Name, Bytes: n})
	}
	if st, err := json.Marshal(b.Status); err == nil {
		s.StatusBytes = len(st)
		s.Bytes += len(st)
	}
	sort.SliceStable(s.Resources, func(i, j int) bool { return s.Resources[i].Bytes > s.Resources[j].Bytes })
	if len(s.Resources) > maxSizedResources {
		s.Resources = s.Resources[:maxSizedResources]
	}
	return s
}

// SecretDataBytes is what the API's validation counts of a Secret: its data values' bytes.
func SecretDataBytes(data map[string][]byte) int {
	n := 0
	for _, v := range data {
		n += len(v)
	}
	return n
}

// SizesFromAnnotation reads SizesAnnotation; ok=false when it is absent or does not parse.
// The text is untrusted: only bounded non-negative numbers and at most maxSizedResources
// names are kept.
func SizesFromAnnotation(ann map[string]string) (ObjectSize, bool) {
	v, ok := ann[SizesAnnotation]
	if !ok || len(v) > 4096 {
		return ObjectSize{}, false
	}
	var s ObjectSize
	if json.Unmarshal([]byte(v), &s) != nil || s.Bytes < 0 || s.StatusBytes < 0 {
		return ObjectSize{}, false
	}
	if len(s.Resources) > maxSizedResources {
		s.Resources = s.Resources[:maxSizedResources]
	}
	for i := range s.Resources {
		if s.Resources[i].Bytes < 0 || len(s.Resources[i].Name) > 253 {
			return ObjectSize{}, false
		}
	}
	return s, true
}

// SizesJSON is the value of SizesAnnotation for s.
func SizesJSON(s ObjectSize) string {
	b, err := json.Marshal(s)
	if err != nil {
		return strconv.Itoa(s.Bytes)
	}
	return string(b)
}
