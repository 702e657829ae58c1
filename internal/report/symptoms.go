package report

import (
	"fmt"
	"strings"

	"github.com/unstick-dev/unstick/internal/finding"
)

// symptomGroupMin is how many clusters one finding ID must have among an incident's
// symptoms to be printed as one line naming them, rather than once per cluster: a
// fleet-wide incident's members all say the same thing.
const symptomGroupMin = 3

// symptomLines are the table's lines for an incident's symptoms, in order: one per symptom,
// except that the symptoms of one ID on symptomGroupMin clusters or more make one line with
// the count and the clusters' names (the summary each repeats is the root cause's).
func symptomLines(inc finding.Incident) []string {
	clusters := map[string][]string{}
	var all []string
	for _, s := range inc.Symptoms {
		clusters[s.ID] = appendOnce(clusters[s.ID], subjectOf(s))
		all = appendOnce(all, subjectOf(s))
	}
	var out []string
	done := map[string]bool{}
	for _, s := range inc.Symptoms {
		names := clusters[s.ID]
		if len(names) < symptomGroupMin {
			out = append(out, "- "+s.ID+" "+clusterLabel(s)+": "+s.Summary)
			continue
		}
		if done[s.ID] {
			continue
		}
		done[s.ID] = true
		if len(names) == len(all) && namedIn(inc.RootCause, names) {
			// The root cause's evidence names these clusters already.
			out = append(out, fmt.Sprintf("- %s on each of the %d clusters", s.ID, len(names)))
			continue
		}
		out = append(out, fmt.Sprintf("- %s on %d clusters: %s", s.ID, len(names), strings.Join(names, ", ")))
	}
	return out
}

func subjectOf(f finding.Finding) string {
	if f.Affects != "" {
		return f.Affects
	}
	return f.Cluster
}

func appendOnce(list []string, s string) []string {
	for _, x := range list {
		if x == s {
			return list
		}
	}
	return append(list, s)
}

// namedIn reports whether f's evidence names every one of clusters.
func namedIn(f finding.Finding, clusters []string) bool {
	var texts []string
	for _, e := range f.Evidence {
		texts = append(texts, e.Text)
	}
	words := map[string]bool{}
	for _, w := range strings.FieldsFunc(strings.Join(texts, " "), func(r rune) bool { return r == ',' || r == ' ' }) {
		words[w] = true
	}
	for _, c := range clusters {
		if !words[c] {
			return false
		}
	}
	return true
}
