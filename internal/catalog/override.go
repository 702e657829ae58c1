package catalog

import (
	"fmt"

	"github.com/unstick-dev/unstick/internal/finding"
)

// WithSeverities returns a copy of c in which the named entries have another severity (the
// config file's severity overrides); c itself is unchanged. An ID the catalogue does not
// know is an error naming it.
func (c *Catalog) WithSeverities(over map[string]finding.Severity) (*Catalog, error) {
	out := &Catalog{byID: make(map[string]*Entry, len(c.byID)), ids: append([]string(nil), c.ids...)}
	for id, e := range c.byID {
		cp := *e
		out.byID[id] = &cp
	}
	for id, s := range over {
		e, ok := out.byID[id]
		if !ok {
			return nil, fmt.Errorf("unknown finding ID %q%s", id, c.suggestSuffix(id))
		}
		e.Severity = s
	}
	return out, nil
}
