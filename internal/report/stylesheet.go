package report

import (
	"html/template"
	"strings"
)

// Stylesheet is the HTML report's CSS, for other pages that should read like the report
// (unstick trace -o html). It is the report's own, embedded, so the two never drift apart.
func Stylesheet() template.CSS {
	_, css, _ := strings.Cut(htmlSource, "<style>")
	css, _, _ = strings.Cut(css, "</style>")
	return template.CSS(css)
}
