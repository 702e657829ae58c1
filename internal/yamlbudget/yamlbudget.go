// Package yamlbudget measures what a YAML text holds once its aliases are expanded.
//
// A YAML alias is a pointer: a 1 MiB anchored scalar aliased 900 times is 1 MiB of text and
// 900 MiB once decoded into Go values or converted to JSON. go-yaml's own guard counts decode
// calls, and 900 calls pass it. This package parses the text into its node graph (aliases stay
// pointers, so that costs what the text does) and counts every node and every scalar byte,
// each alias as a full copy of what it points to, so that a caller can refuse a text before
// decoding it.
package yamlbudget

import (
	"bytes"
	"errors"
	"fmt"
	"io"

	yaml "go.yaml.in/yaml/v3"
)

// Cap ends the counting: a nested "billion laughs" reaches 10^30 nodes, and nothing near
// 1 PiB is ever read.
const Cap = int64(1) << 50

// Size is what a YAML text holds with its aliases expanded: scalar bytes and nodes.
type Size struct {
	Bytes, Nodes int64
}

func (x Size) plus(y Size) Size {
	return Size{min(x.Bytes+y.Bytes, Cap), min(x.Nodes+y.Nodes, Cap)}
}

// fits tells whether x is within lim on both counts.
func (x Size) fits(lim Size) bool { return x.Bytes <= lim.Bytes && x.Nodes <= lim.Nodes }

// MayAlias tells whether a text can hold an alias at all: one needs an anchor (&name) and an
// alias (*name). go-yaml (v2 and v3) reads a name of letters, digits, '_' and '-' right after
// the indicator, and an indicator only where a token starts: after a space, a line break or a
// flow indicator, never glued to a word. So a '&' or '*' counts only when a name character
// follows it and no name character (nor '&', '*', '/', '=', '.' or '%') precedes it: shell
// "a && b", a URL's "?a=1&b=2", RBAC's "*" in quotes, globs such as "/*.yaml" and cron's
// "*/5 * * * *" do not, and a manifest holding them is not parsed here.
func MayAlias(body []byte) bool {
	return hasIndicator(body, '&') && hasIndicator(body, '*')
}

// hasIndicator tells whether c occurs in b where it could start an anchor or an alias.
func hasIndicator(b []byte, c byte) bool {
	for i := 0; i < len(b); i++ {
		j := bytes.IndexByte(b[i:], c)
		if j < 0 {
			return false
		}
		i += j
		if i+1 < len(b) && nameChar(b[i+1]) && (i == 0 || !glued(b[i-1])) {
			return true
		}
	}
	return false
}

// nameChar is a character of an anchor's name (go-yaml's is_alpha).
func nameChar(c byte) bool {
	return c >= '0' && c <= '9' || c >= 'A' && c <= 'Z' || c >= 'a' && c <= 'z' || c == '_' || c == '-'
}

// glued tells whether an indicator after c would be inside a word, where no token starts.
func glued(c byte) bool {
	return nameChar(c) || c == '&' || c == '*' || c == '/' || c == '=' || c == '.' || c == '%'
}

// Measure parses every document of body into its node graph and returns their size, aliases
// expanded. The error is the parser's.
func Measure(body []byte) (Size, error) {
	dec := yaml.NewDecoder(bytes.NewReader(body))
	var total Size
	for {
		var n yaml.Node
		err := dec.Decode(&n)
		if errors.Is(err, io.EOF) {
			return total, nil
		}
		if err != nil {
			return Size{}, err
		}
		s := sizer{done: map[*yaml.Node]Size{}, open: map[*yaml.Node]bool{}}
		total = total.plus(s.size(&n))
	}
}

// TooLarge is the error of a text whose aliases expand past its limit.
type TooLarge struct {
	Size, Limit Size
}

func (e *TooLarge) Error() string {
	return fmt.Sprintf("with its YAML aliases expanded it holds %s in %s nodes, more than the %s in %s nodes allowed",
		SizeText(e.Size.Bytes), CountText(e.Size.Nodes), SizeText(e.Limit.Bytes), CountText(e.Limit.Nodes))
}

// Check refuses body, with a *TooLarge error, when its aliases expand past lim. A text without
// both '&' and '*' is not parsed and always passes; one the parser refuses returns the
// parser's error (the caller's own decoding would refuse it too).
func Check(body []byte, lim Size) error {
	if !MayAlias(body) {
		return nil
	}
	x, err := Measure(body)
	if err != nil {
		return err
	}
	if !x.fits(lim) {
		return &TooLarge{Size: x, Limit: lim}
	}
	return nil
}

// Beyond is a limit of what body's text holds plus extra: text without aliases holds no more
// scalar bytes than it has bytes, and a node a byte at most (give or take a few for a
// document's own), so such a limit with any room does not refuse it, however large.
func Beyond(body []byte, extra Size) Size {
	n := int64(len(body))
	return Size{n + extra.Bytes, n + extra.Nodes}
}

// sizer measures nodes, remembering each anchored node's size so that an alias costs one look-up.
type sizer struct {
	done map[*yaml.Node]Size
	open map[*yaml.Node]bool // anchored nodes being measured: an alias to one is a cycle
}

func (s *sizer) size(n *yaml.Node) Size {
	if n == nil {
		return Size{}
	}
	if n.Kind == yaml.AliasNode {
		return s.alias(n.Alias)
	}
	x := Size{Bytes: int64(len(n.Value)), Nodes: 1}
	for _, c := range n.Content {
		x = x.plus(s.size(c))
	}
	return x
}

// alias is the size of the node an alias points to, measured once.
func (s *sizer) alias(n *yaml.Node) Size {
	if n == nil {
		return Size{}
	}
	if x, ok := s.done[n]; ok {
		return x
	}
	if s.open[n] {
		// An anchor that contains its own alias: go-yaml refuses the document; as a size
		// it is endless.
		return Size{Cap, Cap}
	}
	s.open[n] = true
	x := s.size(n)
	delete(s.open, n)
	s.done[n] = x
	return x
}

// SizeText prints an expanded size in KiB or MiB, the cap as what it is.
func SizeText(n int64) string {
	switch {
	case n >= Cap:
		return "more than 1 PiB"
	case n < 1<<20:
		return fmt.Sprintf("%d KiB", (n+1023)>>10)
	}
	return fmt.Sprintf("%d MiB", (n+(1<<20)-1)>>20)
}

// CountText prints a node count, the cap as what it is.
func CountText(n int64) string {
	if n >= Cap {
		return fmt.Sprintf("more than %d", Cap)
	}
	return fmt.Sprint(n)
}
