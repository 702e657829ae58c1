package report

import (
	"github.com/unstick-dev/unstick/internal/finding"
	"github.com/unstick-dev/unstick/internal/redact"
)

// redactQuoted passes every string a report quotes from the cluster (summaries, evidence
// sources and texts, error messages, skipped-file reasons) through the one free-text
// redactor, once, where the report is assembled: every format and serve's endpoints render
// this Report, so none can quote a credential a check copied from a message or a log line.
// Findings are shared with the caller (serve keeps them between evaluations): changed
// evidence gets a new slice rather than being edited in place.
func (r *Report) redactQuoted() {
	r.Findings = append(r.Findings[:0:0], r.Findings...)
	r.Incidents = append(r.Incidents[:0:0], r.Incidents...)
	for i := range r.Findings {
		redactFinding(&r.Findings[i])
	}
	for i := range r.Incidents {
		redactFinding(&r.Incidents[i].RootCause)
		syms := make([]finding.Finding, len(r.Incidents[i].Symptoms))
		copy(syms, r.Incidents[i].Symptoms)
		for j := range syms {
			redactFinding(&syms[j])
		}
		r.Incidents[i].Symptoms = syms
	}
	errs := make([]finding.ScanError, len(r.Errors))
	for i, e := range r.Errors {
		e.Message = redact.String(e.Message)
		errs[i] = e
	}
	r.Errors = errs
	if r.Skipped != nil {
		sk := append(r.Skipped[:0:0], r.Skipped...)
		for i := range sk {
			sk[i].Reason = redact.String(sk[i].Reason)
		}
		r.Skipped = sk
	}
}

func redactFinding(f *finding.Finding) {
	f.Summary = redact.String(f.Summary)
	ev := make([]finding.Evidence, len(f.Evidence))
	for i, e := range f.Evidence {
		ev[i] = finding.Evidence{Source: redact.String(e.Source), Text: redact.String(e.Text)}
	}
	if f.Evidence != nil {
		f.Evidence = ev
	}
}
