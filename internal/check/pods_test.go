package check

import "testing"

// TestSchedulingID holds the split of scheduler messages between the two catalogue IDs to the
// node counts the scheduler reports (kubernetes pkg/scheduler/framework/types.go FitError).
func TestSchedulingID(t *testing.T) {
	for _, c := range []struct{ msg, want string }{
		{"0/3 nodes are available: 3 node(s) had untolerated taint {dedicated: edge}. preemption: 0/3 nodes are available: 3 Preemption is not helpful for scheduling.",
			"pod/unschedulable-taints"},
		{"0/4 nodes are available: 1 node(s) had untolerated taint {node-role.kubernetes.io/etcd: true}, 3 Insufficient memory. preemption: 0/4 nodes are available: 1 Preemption is not helpful for scheduling, 3 No preemption victims found for incoming pod.",
			"pod/unschedulable-resources"},
		// a tie goes to placement: capacity elsewhere would not help the tainted nodes
		{"0/2 nodes are available: 1 Insufficient cpu, 1 node(s) had untolerated taint(s). preemption: 0/2 nodes are available: 2 Preemption is not helpful for scheduling.",
			"pod/unschedulable-taints"},
		{"0/3 nodes are available: 3 node(s) didn't match Pod's node affinity/selector. preemption: 0/3 nodes are available: 3 Preemption is not helpful for scheduling.",
			"pod/unschedulable-taints"},
		{"0/3 nodes are available: 1 node(s) had untolerated taint {test-unschedulable: true}, 2 node(s) didn't match Pod's node affinity/selector. preemption: 0/3 nodes are available: 3 Preemption is not helpful for scheduling.",
			"pod/unschedulable-taints"},
		{"0/3 nodes are available: 1 node(s) were unschedulable, 2 Insufficient cpu.", "pod/unschedulable-resources"},
		// neither placement nor capacity
		{"0/3 nodes are available: pod has unbound immediate PersistentVolumeClaims. preemption: 0/3 nodes are available: 3 Preemption is not helpful for scheduling.", ""},
		{"0/3 nodes are available: 3 node(s) had volume node affinity conflict.", ""},
		// not a FitError: the kubelet refusing an admitted pod
		{"Node didn't have enough resource: cpu, requested: 500, used: 3800, capacity: 4000", "pod/unschedulable-resources"},
		{"", ""},
	} {
		if got := schedulingID(c.msg); got != c.want {
			t.Errorf("schedulingID(%q) = %q, want %q", c.msg, got, c.want)
		}
	}
}
