package check

import "github.com/unstick-dev/unstick/internal/finding"

// linkSymptoms records, on each symptom of an incident (g[1:], root cause first), the key that
// linked it: a walk from the root cause over shared keys reaches every finding of the group
// (they were grouped by those keys), and each finding reached is linked by the key it shares
// with the finding it was reached from.
func linkSymptoms(g []finding.Finding) {
	byKey := map[string][]int{}
	for i, f := range g {
		for _, k := range f.Keys {
			byKey[k] = append(byKey[k], i)
		}
	}
	seen := make([]bool, len(g))
	seen[0] = true
	queue := []int{0}
	for len(queue) > 0 {
		i := queue[0]
		queue = queue[1:]
		for _, k := range g[i].Keys {
			for _, j := range byKey[k] {
				if !seen[j] {
					seen[j] = true
					g[j].LinkedBy = k
					queue = append(queue, j)
				}
			}
		}
	}
}
