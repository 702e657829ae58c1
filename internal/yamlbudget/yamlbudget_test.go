package yamlbudget

import (
	"errors"
	"fmt"
	"strings"
	"testing"

	"github.com/unstick-dev/unstick/internal/yamlbudget/bombtest"
)

// TestAliasCountsExpandedSize holds the measurement to what aliases become.
func TestAliasCountsExpandedSize(t *testing.T) {
	for _, c := range []struct {
		name      string
		doc       string
		bytes     int64
		nodes     int64
		parseFail bool
	}{
		{name: "no alias", doc: "a: xyz\n", bytes: 4, nodes: 4},
		{name: "scalar aliased 3 times", doc: "a: &v " + strings.Repeat("x", 1000) + "\nb: [*v, *v, *v]\n", bytes: 4002, nodes: 9},
		// document, mapping, 3 keys; v: 3 nodes; w: 1+2×3; c: 1+2×7
		{name: "alias of an alias list", doc: "a: &v [1, 2]\nb: &w [*v, *v]\nc: [*w, *w]\n", bytes: 17, nodes: 30},
		{name: "an anchor that holds itself", doc: "a: &v [*v]\n", bytes: Cap, nodes: Cap},
		{name: "laughs 40 levels deep", doc: laughs(40), bytes: Cap, nodes: Cap},
		{name: "not YAML", doc: "a: [\n", parseFail: true},
	} {
		t.Run(c.name, func(t *testing.T) {
			x, err := Measure([]byte(c.doc))
			if c.parseFail != (err != nil) {
				t.Fatalf("parse error %v, want one: %v", err, c.parseFail)
			}
			if c.parseFail {
				return
			}
			if x.Bytes != c.bytes || x.Nodes != c.nodes {
				t.Errorf("got %d bytes in %d nodes, want %d in %d", x.Bytes, x.Nodes, c.bytes, c.nodes)
			}
		})
	}
}

func laughs(levels int) string {
	var b strings.Builder
	b.WriteString("l0: &l0 lol\n")
	for i := 1; i < levels; i++ {
		fmt.Fprintf(&b, "l%d: &l%d %s\n", i, i, bombtest.AliasList(fmt.Sprintf("l%d", i-1), 9))
	}
	return b.String()
}

// TestMeasureSumsDocuments: a manifest's documents are measured each, and summed.
func TestMeasureSumsDocuments(t *testing.T) {
	x, err := Measure([]byte("a: &v xx\nb: *v\n---\nc: &w yyy\nd: [*w, *w]\n"))
	if err != nil {
		t.Fatal(err)
	}
	// document, mapping, a, v, b, copy of v: 6 nodes, 1+2+1+2 bytes; then document, mapping,
	// c, w, d, sequence, 2 copies of w: 8 nodes, 1+3+1+6 bytes
	if x.Bytes != 17 || x.Nodes != 14 {
		t.Errorf("got %d bytes in %d nodes, want 17 in 14", x.Bytes, x.Nodes)
	}
}

// TestCheckRefusesBombs: each bomb is refused with its expanded size, allocating a few MiB
// where decoding it would take gigabytes; the aliases people write pass.
func TestCheckRefusesBombs(t *testing.T) {
	for name, doc := range bombtest.Shapes("cattle-fleet-system", "bomb") {
		t.Run(name, func(t *testing.T) {
			body := []byte(doc)
			var err error
			bombtest.WithinAlloc(t, "Check", func() { err = Check(body, Beyond(body, Size{16 << 20, 1 << 18})) })
			var tl *TooLarge
			if !errors.As(err, &tl) || !strings.HasPrefix(err.Error(), "with its YAML aliases expanded it holds ") {
				t.Fatalf("want a TooLarge error, got %v", err)
			}
			if tl.Size.Bytes < 800<<20 {
				t.Errorf("expanded bytes %d, want at least 800 MiB", tl.Size.Bytes)
			}
		})
	}
	shared := []byte("metadata:\n  labels: &l {app: x}\n  annotations: *l\ndata:\n  a: &v \"" + strings.Repeat("x", 10<<10) + "\"\n  b: *v\n")
	if err := Check(shared, Beyond(shared, Size{16 << 20, 1 << 18})); err != nil {
		t.Errorf("a shared label set and a value used twice must pass: %v", err)
	}
	plain := []byte("url: https://x/?a=1&b=2\nglob: '*.yaml'\n" + strings.Repeat("k: v\n", 1000))
	if err := Check(plain, Beyond(plain, Size{})); err != nil {
		t.Errorf("a text with '&' and '*' but no alias holds no more than its size: %v", err)
	}
}

func ExampleTooLarge() {
	err := &TooLarge{Size: Size{900 << 20, 903}, Limit: Size{17 << 20, 1 << 18}}
	fmt.Println(err)
	// Output: with its YAML aliases expanded it holds 900 MiB in 903 nodes, more than the 17 MiB in 262144 nodes allowed
}

// MayAlias holds every way go-yaml reads an anchor and an alias, and skips what manifests
// hold without one: every text it says true of is parsed, every other is not.
func TestMayAlias(t *testing.T) {
	for _, doc := range []string{
		"a: &v x\nb: *v\n",
		"&v a: *v\n",
		"--- &v\n- *v\n",
		"a: [&v x,*v]\n",
		"{\"a\": &v x, \"b\":*v}\n",
		"a: [\t&v x,\t*v]\n",
		"\ufeff&v [*v]\n",
		"a: &v-1_X x\nb: *v-1_X\n",
		"a: !!str &v x\nb: [ *v ]\n",
		"a: &v x\r\nb: *v\r\n",
		"a: &v x\u0085b: *v\n",
	} {
		x, err := Measure([]byte(doc))
		if err != nil || x.Nodes == 0 {
			t.Errorf("%q: not YAML with an alias (%v), fix the case", doc, err)
		}
		if !MayAlias([]byte(doc)) {
			t.Errorf("MayAlias(%q) = false: its alias would not be measured", doc)
		}
	}
	for _, doc := range []string{
		"command: [sh, -c, \"make && make install\"]\n",
		"url: https://example.com/?a=1&b=2\nrules: [{verbs: [\"*\"]}]\n",
		"schedule: \"*/5 * * * *\"\nfiles: /etc/*.conf\nq: a&b*c\n",
		"args: [--path=/*, x&&y]\n",
	} {
		if MayAlias([]byte(doc)) {
			t.Errorf("MayAlias(%q) = true: a text without an alias is parsed", doc)
		}
	}
}
