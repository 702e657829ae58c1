package trace

import (
	_ "embed"
	"html/template"
	"io"
	"strings"
	"sync"

	"github.com/unstick-dev/unstick/internal/report"
	"github.com/unstick-dev/unstick/internal/textsafe"
)

// The HTML trace is one self-contained page styled as the HTML report; html/template escapes
// every value read from the input, and nothing is loaded from anywhere.

//go:embed trace.tmpl
var htmlSource string

// htmlTemplate is parsed on the first HTML trace, not by every process at start.
var htmlTemplate = sync.OnceValue(func() *template.Template {
	return template.Must(template.New("trace").Funcs(template.FuncMap{
		"upper": strings.ToUpper,
		"at":    at,
		"safe":  textsafe.Line,
		"badge": badge,
	}).Parse(htmlSource))
})

type htmlPage struct {
	*Trace
	CSS      template.CSS
	Name     string
	Version  string
	Headline string
	Verdict  string
	Rows     []ClusterRow
	Hidden   int
}

func renderHTML(w io.Writer, tr *Trace, o RenderOptions) error {
	rows, hidden := listedRows(tr.Clusters)
	p := htmlPage{Trace: tr, CSS: report.Stylesheet(), Name: nameOr(o.Name), Version: o.Version,
		Headline: headline(tr), Verdict: tableVerdict(tr), Rows: rows, Hidden: hidden}
	return htmlTemplate().Execute(w, p)
}

// badge is the report's badge colour for a stage status.
func badge(status string) string {
	switch status {
	case Reached:
		return "ok"
	case Failed:
		return "error"
	case Waiting:
		return "warning"
	}
	return "info"
}
