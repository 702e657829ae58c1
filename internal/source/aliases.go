package source

import (
	"bytes"
	"fmt"

	"github.com/unstick-dev/unstick/internal/yamlbudget"
)

// A YAML alias is a pointer: a 1 MiB anchored scalar aliased 900 times is 1 MiB in the file
// and 900 MiB once converted to JSON. The loader measures what a document expands to
// (yamlbudget: every node and every scalar byte, each alias counted as a copy of what it
// points to) and holds that to the memory budget before converting it.

// Per expanded node and byte, what converting and decoding costs at once: the decoded tree
// (an interface value and a map entry or slice slot per node), the JSON text while it grows
// (up to three times its size) and its decoding into an object (jsonParseCost).
const (
	expandedNodeCost = 160
	expandedByteCost = 3 + jsonParseCost
)

// expansion is what a YAML document holds with its aliases expanded.
type expansion yamlbudget.Size

// need is the memory that converting and decoding the expanded document takes at once.
func (x expansion) need() int64 {
	return min(x.Bytes*expandedByteCost+x.Nodes*expandedNodeCost, yamlbudget.Cap)
}

// mayAlias tells whether a document can hold an alias at all: one needs an anchor (&) and a
// reference (*). Most Kubernetes objects have neither and are parsed once.
func mayAlias(body []byte) bool {
	return bytes.IndexByte(body, '&') >= 0 && bytes.IndexByte(body, '*') >= 0
}

// yamlExpansion parses one YAML document into its node graph and measures it expanded. The
// error is the parser's.
func yamlExpansion(body []byte) (expansion, error) {
	x, err := yamlbudget.Measure(body)
	return expansion(x), err
}

// aliasLimit is the error on a document whose aliases expand past what the budget allows.
func aliasLimit(x expansion, budget int64) string {
	return fmt.Sprintf("not read: with its YAML aliases expanded this document holds %s in %s nodes; reading it needs about %s, more than is left of the memory budget of %s (raise it with %s)",
		yamlbudget.SizeText(x.Bytes), yamlbudget.CountText(x.Nodes), yamlbudget.SizeText(x.need()), mib(budget), MemoryEnv)
}

// aliasesFit tells whether a YAML document, its aliases expanded, fits in max bytes; one the
// parser refuses does not.
func aliasesFit(body []byte, max int64) bool {
	if !mayAlias(body) {
		return true
	}
	x, err := yamlExpansion(body)
	return err == nil && x.need() <= max
}
