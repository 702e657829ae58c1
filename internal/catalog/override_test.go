package catalog

import (
	"strings"
	"testing"

	"github.com/unstick-dev/unstick/internal/finding"
)

func TestWithSeverities(t *testing.T) {
	c, err := Load()
	if err != nil {
		t.Fatal(err)
	}
	before, _ := c.Get("suc/image-floating")
	was := before.Severity
	o, err := c.WithSeverities(map[string]finding.Severity{"suc/image-floating": finding.Critical})
	if err != nil {
		t.Fatal(err)
	}
	if e, _ := o.Get("suc/image-floating"); e.Severity != finding.Critical {
		t.Errorf("override not applied: %s", e.Severity)
	}
	if e, _ := c.Get("suc/image-floating"); e.Severity != was {
		t.Errorf("the original catalogue changed to %s", e.Severity)
	}
	if len(o.IDs()) != len(c.IDs()) {
		t.Error("the copy lost entries")
	}
	_, err = c.WithSeverities(map[string]finding.Severity{"suc/image-flaoting": finding.Info})
	if err == nil || !strings.Contains(err.Error(), "suc/image-floating") {
		t.Errorf("an unknown ID: %v", err)
	}
}
