package manifest

import (
	"strings"

	"github.com/unstick-dev/unstick/internal/yamlbudget"
)

// aliasRoom is what YAML aliases may add to what a manifest's text holds. Helm renders a
// chart's templates to text (toYaml writes no anchors), so an anchor in a release manifest is
// one a chart wrote literally: a shared label set, a repeated value, a few KiB. 16 MiB and
// 262,144 nodes more than the text is far beyond any such use, and decoding that much into
// objects takes about 150 MiB (6 bytes a byte, 160 a node), well inside the 1 GiB budget,
// where a Secret's 1 MiB anchored value aliased 900 times would take gigabytes. A manifest
// without aliases never holds more than its text, so it is never refused, however large.
var aliasRoom = yamlbudget.Size{Bytes: 16 << 20, Nodes: 1 << 18}

// CheckAliases refuses a manifest whose YAML aliases expand past what its text holds plus
// aliasRoom, before anything decodes it; the error starts "with its YAML aliases expanded".
// A manifest with an anchor and an alias that does not parse as YAML is refused too, with the
// parser's error: it could not be measured. Without both '&' and '*' nothing is parsed.
func CheckAliases(text string) error {
	if strings.IndexByte(text, '&') < 0 || strings.IndexByte(text, '*') < 0 {
		return nil
	}
	b := []byte(text)
	return yamlbudget.Check(b, yamlbudget.Beyond(b, aliasRoom))
}
