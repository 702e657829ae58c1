package check

import "testing"

// TestSyncJobNames reads the controller's SyncJob event ("Jobs synced for version %s on Nodes
// %s. Hash: %s", handle_upgrade.go) for one node and the Plan's current hash only.
func TestSyncJobNames(t *testing.T) {
	const hash = "f9ac785948c848b237c05b119514df8343dea8849ca86c3d048451a1"
	msg := "Jobs synced for version v1.35.3-k3s1 on Nodes worker-1,worker-12. Hash: " + hash
	for _, c := range []struct {
		msg, host, hash string
		want            bool
	}{
		{msg, "worker-1", hash, true},
		{msg, "worker-12", hash, true},
		{msg, "worker-2", hash, false},                 // not listed (worker-12 is not worker-2's prefix match)
		{msg, "worker-1", "8e4c25784a8be62000", false}, // another hash: an earlier version's attempt
		{"Jobs complete for version v1.35.3-k3s1. Hash: " + hash, "worker-1", hash, false},
	} {
		if got := syncJobNames(c.msg, c.host, c.hash); got != c.want {
			t.Errorf("syncJobNames(%q, %q) = %v, want %v", c.msg, c.host, got, c.want)
		}
	}
}
