package source

import (
	"bytes"
	"fmt"

	yaml "go.yaml.in/yaml/v3"
)

// A YAML alias is a pointer: a 1 MiB anchored scalar aliased 900 times is 1 MiB in the file
// and 900 MiB once converted to JSON. go-yaml's own guard counts decode calls, and 900 calls
// pass it, so the loader measures what a document expands to before converting it: every
// node and every scalar byte, each alias counted as a copy of what it points to.

// Per expanded node and byte, what converting and decoding costs at once: the decoded tree
// (an interface value and a map entry or slice slot per node), the JSON text while it grows
// (up to three times its size) and its decoding into an object (jsonParseCost).
const (
	expandedNodeCost = 160
	expandedByteCost = 3 + jsonParseCost
	// expansionCap ends the counting: a nested "billion laughs" reaches 10^30 nodes, and
	// nothing near 1 PiB is ever read.
	expansionCap = int64(1) << 50
)

// expansion is what a YAML document holds with its aliases expanded.
type expansion struct {
	bytes, nodes int64
}

func (x expansion) plus(y expansion) expansion {
	return expansion{min(x.bytes+y.bytes, expansionCap), min(x.nodes+y.nodes, expansionCap)}
}

// need is the memory that converting and decoding the expanded document takes at once.
func (x expansion) need() int64 {
	return min(x.bytes*expandedByteCost+x.nodes*expandedNodeCost, expansionCap)
}

// mayAlias tells whether a document can hold an alias at all: one needs an anchor (&) and a
// reference (*). Most Kubernetes objects have neither and are parsed once.
func mayAlias(body []byte) bool {
	return bytes.IndexByte(body, '&') >= 0 && bytes.IndexByte(body, '*') >= 0
}

// yamlExpansion parses one YAML document into its node graph (aliases stay pointers, so this
// costs what the file does) and measures it expanded. The error is the parser's.
func yamlExpansion(body []byte) (expansion, error) {
	var n yaml.Node
	if err := yaml.NewDecoder(bytes.NewReader(body)).Decode(&n); err != nil {
		return expansion{}, err
	}
	s := sizer{done: map[*yaml.Node]expansion{}, open: map[*yaml.Node]bool{}}
	return s.size(&n), nil
}

// sizer measures nodes, remembering each anchored node's size so that an alias costs one look-up.
type sizer struct {
	done map[*yaml.Node]expansion
	open map[*yaml.Node]bool // anchored nodes being measured: an alias to one is a cycle
}

func (s *sizer) size(n *yaml.Node) expansion {
	if n == nil {
		return expansion{}
	}
	if n.Kind == yaml.AliasNode {
		return s.alias(n.Alias)
	}
	x := expansion{bytes: int64(len(n.Value)), nodes: 1}
	for _, c := range n.Content {
		x = x.plus(s.size(c))
	}
	return x
}

// alias is the size of the node an alias points to, measured once.
func (s *sizer) alias(n *yaml.Node) expansion {
	if n == nil {
		return expansion{}
	}
	if x, ok := s.done[n]; ok {
		return x
	}
	if s.open[n] {
		// An anchor that contains its own alias: go-yaml refuses the document; as a size
		// it is endless.
		return expansion{expansionCap, expansionCap}
	}
	s.open[n] = true
	x := s.size(n)
	delete(s.open, n)
	s.done[n] = x
	return x
}

// sizeText prints an expanded size, the cap as what it is.
func sizeText(n int64) string {
	if n >= expansionCap {
		return "more than 1 PiB"
	}
	return mib(n)
}

func countText(n int64) string {
	if n >= expansionCap {
		return fmt.Sprintf("more than %d", expansionCap)
	}
	return fmt.Sprint(n)
}

// aliasLimit is the error on a document whose aliases expand past what the budget allows.
func aliasLimit(x expansion, budget int64) string {
	return fmt.Sprintf("not read: with its YAML aliases expanded this document holds %s in %s nodes; reading it needs about %s, more than is left of the memory budget of %s (raise it with %s)",
		sizeText(x.bytes), countText(x.nodes), sizeText(x.need()), mib(budget), MemoryEnv)
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
