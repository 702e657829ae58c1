package plural

import "testing"

func TestOf(t *testing.T) {
	for _, c := range []struct {
		n    int
		word string
		want string
	}{
		{0, "cluster", "0 clusters"}, {1, "cluster", "1 cluster"}, {2, "finding", "2 findings"}, {1, "file", "1 file"},
	} {
		if got := Of(c.n, c.word); got != c.want {
			t.Errorf("Of(%d, %q) = %q, want %q", c.n, c.word, got, c.want)
		}
	}
	if got := Forms(1, "entry", "entries"); got != "1 entry" {
		t.Errorf("Forms(1) = %q", got)
	}
	if got := Forms(3, "entry", "entries"); got != "3 entries" {
		t.Errorf("Forms(3) = %q", got)
	}
}
