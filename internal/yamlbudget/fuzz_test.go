package yamlbudget

import (
	"testing"

	"github.com/unstick-dev/unstick/internal/yamlbudget/bombtest"
)

// FuzzMayAlias holds the pre-filter to what it promises: a text MayAlias passes over is never
// expanded by go-yaml (it holds no more scalar bytes than it has, and a node a byte at most,
// give or take a document's own), so skipping its measurement cannot let a bomb through. Check
// never panics on any input.
func FuzzMayAlias(f *testing.F) {
	for _, s := range []string{
		"a: &v x\nb: *v\n", "{\"a\": &v x, \"b\":*v}\n", "a: [\t&v x,\t*v]\n", "\ufeff&v [*v]\n",
		"command: [sh, -c, \"make && make install\"]\n", "url: https://example.com/?a=1&b=2\nverbs: [\"*\"]\n",
		"schedule: \"*/5 * * * *\"\nfiles: /etc/*.conf\n", "a: &v x\u0085b: *v\n",
		bombtest.Laughs("ns", "n"),
	} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, body []byte) {
		_ = Check(body, Size{1 << 20, 1 << 14})
		if MayAlias(body) {
			return
		}
		x, err := Measure(body)
		if err != nil {
			return
		}
		if n := int64(len(body)); x.Bytes > n || x.Nodes > n+4 {
			t.Fatalf("MayAlias(%q) = false, but it expands to %d bytes in %d nodes", body, x.Bytes, x.Nodes)
		}
	})
}
