package classify

import (
	"regexp"
	"strconv"
	"strings"
	"sync"
)

// OtherReason is the SchedulingReasons key for scheduler reasons that are neither taints nor
// resources (node affinity/selector, volume binding, topology spread, ...).
const OtherReason = "other"

// schedEntry finds the start of each "<count> <reason>" entry of a FitError message:
// "0/%v nodes are available: %v." with the reasons "%v %v" (count, reason), sorted and joined
// with ", " (kubernetes pkg/scheduler/framework/types.go FitError.Error).
var schedEntry = sync.OnceValue(func() *regexp.Regexp { return regexp.MustCompile(`(?:^|,\s*)(\d+) `) })

// SchedulingReasons parses a scheduler FailedScheduling message such as
//
//	0/3 nodes are available: 1 node(s) had untolerated taint {node-role.kubernetes.io/control-plane: }, 2 Insufficient cpu. preemption: ...
//
// into node counts per catalogue ID: "pod/unschedulable-taints", "pod/unschedulable-resources"
// and OtherReason. Only the filter part is read (the "preemption:" part repeats the counts).
// A node that fails for several reasons (e.g. Insufficient cpu and Insufficient memory) is
// counted once per reason, as the scheduler does. It returns nil when text is not such a
// message.
func SchedulingReasons(msg string) map[string]int {
	lower := normalize(msg)
	const head = "nodes are available:"
	i := strings.Index(lower, head)
	if i < 0 {
		return nil
	}
	body := lower[i+len(head):]
	if j := strings.Index(body, "preemption:"); j >= 0 {
		body = body[:j]
	}
	body = strings.TrimSpace(body)
	body = strings.TrimSuffix(body, ".")
	out := map[string]int{}
	locs := schedEntry().FindAllStringSubmatchIndex(body, -1)
	for k, loc := range locs {
		n, err := strconv.Atoi(body[loc[2]:loc[3]])
		if err != nil {
			continue
		}
		end := len(body)
		if k+1 < len(locs) {
			end = locs[k+1][0]
		}
		reason := strings.TrimSpace(body[loc[1]:end])
		out[schedulingCategory(reason)] += n
	}
	return out
}

// schedulingCategory maps one scheduler reason to a catalogue ID.
func schedulingCategory(reason string) string {
	switch {
	case strings.HasPrefix(reason, "insufficient "), strings.Contains(reason, "too many pods"),
		strings.Contains(reason, "didn't have free ports"):
		return "pod/unschedulable-resources"
	case strings.Contains(reason, "untolerated taint"), strings.Contains(reason, "that the pod didn't tolerate"),
		strings.Contains(reason, "were unschedulable"):
		return "pod/unschedulable-taints"
	default:
		return OtherReason
	}
}
