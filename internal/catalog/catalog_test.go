package catalog

import (
	"slices"
	"sort"
	"strings"
	"testing"

	"sigs.k8s.io/yaml"
)

// specIDs is the finding catalogue of SPEC §3. It is the contract: users filter,
// suppress and alert on these IDs, so every one must stay in the embedded catalogue.
var specIDs = []string{
	// fleet/
	"fleet/agent-upgrade-stuck",
	"fleet/agent-heartbeat-stale",
	"fleet/agent-version-skew",
	"fleet/registration-broken",
	"fleet/bundle-err-applied",
	"fleet/bundle-wait-applied-stuck",
	"fleet/bundle-not-ready",
	"fleet/bundle-modified",
	"fleet/content-missing",
	"fleet/fleetwide-failure",
	"fleet/cluster-paused",
	// helm/
	"helm/release-pending",
	"helm/release-failed",
	"helm/no-deployed-release",
	// pod/ and workload/
	"pod/unschedulable-resources",
	"pod/unschedulable-taints",
	"pod/terminating-stuck",
	"pod/crashloop",
	"pod/oom-killed",
	"pod/config-ref-missing",
	"workload/admission-denied",
	"workload/quota-exceeded",
	"workload/rollout-stalled",
	// image/
	"image/pull-auth",
	"image/pull-not-found",
	"image/pull-network",
	"image/arch-mismatch",
	// agent/
	"agent/crd-missing",
	"agent/config-invalid",
	"agent/tls",
	"agent/rbac-forbidden",
	"agent/api-unreachable",
	// suc/
	"suc/image-missing",
	"suc/image-arch",
	"suc/image-floating",
	"suc/kubectl-skew",
	"suc/job-stale-spec",
	"suc/plan-stuck",
	"suc/plan-selects-no-nodes",
	"suc/node-left-cordoned",
	"suc/rbac",
	"suc/job-deadline",
	"suc/controller-image",
	"suc/node-label-blocks-rerun",
	"suc/plan-invalid",
	// node/ and namespace/
	"node/not-ready",
	"namespace/terminating-stuck",
	// crd/, cluster/ and config/
	"crd/missing",
	"crd/version-not-served",
	"cluster/clock-skew",
	"cluster/headroom-low",
	"cluster/etcd-backup-stale",
	"config/agent-no-requests",
	"config/agent-short-grace",
	"config/private-registry-no-pull-secret",
}

// adviceOnly entries may have a ladder without commands: they recommend, they do not fix.
var adviceOnly = map[string]bool{
	"config/agent-no-requests": true,
	"config/agent-short-grace": true,
}

var riskOrder = map[string]int{"none": 0, "low": 1, "medium": 2, "high": 3}

func mustLoad(t *testing.T) *Catalog {
	t.Helper()
	c, err := Load()
	if err != nil {
		t.Fatalf("embedded catalogue does not load: %v", err)
	}
	return c
}

func TestEmbeddedCatalogLoads(t *testing.T) {
	c := mustLoad(t)
	if len(c.IDs()) == 0 {
		t.Fatal("embedded catalogue has no entries")
	}
}

func TestEverySpecIDIsCatalogued(t *testing.T) {
	c := mustLoad(t)
	if len(specIDs) != 55 {
		t.Fatalf("SPEC §3 lists 55 IDs, the test lists %d", len(specIDs))
	}
	for _, id := range specIDs {
		if _, ok := c.Get(id); !ok {
			t.Errorf("SPEC §3 ID %q missing from catalog.yaml", id)
		}
	}
}

// The file is kept sorted by family, then name, so reviews and merges stay readable.
func TestCatalogFileIsSorted(t *testing.T) {
	var entries []Entry
	if err := yaml.UnmarshalStrict(builtin, &entries); err != nil {
		t.Fatal(err)
	}
	ids := make([]string, len(entries))
	for i, e := range entries {
		ids[i] = e.ID
	}
	if !sort.StringsAreSorted(ids) {
		for i := 1; i < len(ids); i++ {
			if ids[i-1] > ids[i] {
				t.Errorf("catalog.yaml not sorted: %q comes before %q", ids[i-1], ids[i])
			}
		}
	}
}

func TestEntriesAreComplete(t *testing.T) {
	c := mustLoad(t)
	for _, id := range c.IDs() {
		e, _ := c.Get(id)
		t.Run(id, func(t *testing.T) {
			if n := len([]rune(e.Title)); n > 60 {
				t.Errorf("title is %d characters, want at most 60: %q", n, e.Title)
			}
			if e.Rank <= 0 {
				t.Errorf("rank %d, want > 0", e.Rank)
			}
			if strings.TrimSpace(e.Explanation) == "" || strings.TrimSpace(e.Detection) == "" {
				t.Error("explanation and detection must not be blank")
			}
			if e.Ladder[0].Rung != "observe" || e.Ladder[0].Risk != "none" {
				t.Errorf("first rung is %s/%s, want observe/none (evidence before any change)", e.Ladder[0].Rung, e.Ladder[0].Risk)
			}
			withCommands := 0
			prev := -1
			for i, r := range e.Ladder {
				risk, ok := riskOrder[r.Risk]
				if !ok {
					t.Errorf("rung %d (%s): unknown risk %q", i, r.Rung, r.Risk)
					continue
				}
				if risk < prev {
					t.Errorf("rung %d (%s, risk %s) is lower risk than the one before: ladders go from lowest to highest risk", i, r.Rung, r.Risk)
				}
				prev = risk
				if strings.TrimSpace(r.Action) == "" {
					t.Errorf("rung %d (%s) has no action", i, r.Rung)
				}
				if len(r.Commands) > 0 {
					withCommands++
				}
			}
			if withCommands == 0 && !adviceOnly[id] {
				t.Error("no rung has a command")
			}
			for _, th := range e.Thresholds {
				if th.Name == "" || th.Default == "" || th.Description == "" {
					t.Errorf("threshold %+v incomplete", th)
				}
			}
			for _, ref := range e.References {
				if !strings.HasPrefix(ref, "https://") {
					t.Errorf("reference %q is not an https URL", ref)
				}
			}
		})
	}
}

// Commands are printed for operators to copy: each must be a kubectl or helm
// invocation written the way it is typed (no prompt, no sudo, no leading space).
func TestCommandsAreKubectlOrHelm(t *testing.T) {
	c := mustLoad(t)
	for _, id := range c.IDs() {
		e, _ := c.Get(id)
		for _, r := range e.Ladder {
			for _, cmd := range r.Commands {
				switch {
				case strings.HasPrefix(cmd, "kubectl "), strings.HasPrefix(cmd, "helm "):
				default:
					t.Errorf("%s %s: command does not start with \"kubectl \" or \"helm \": %q", id, r.Rung, cmd)
				}
				if strings.Contains(cmd, "\n") {
					t.Errorf("%s %s: command spans several lines: %q", id, r.Rung, cmd)
				}
			}
		}
	}
}

// The fix ladder repairs state objects only (SPEC §4): never registrations, CRDs or namespaces,
// and never a forced pod deletion.
func TestNoForbiddenMutations(t *testing.T) {
	forbidden := []string{
		"delete crd", "delete customresourcedefinition",
		"delete namespace", "delete ns ",
		"delete clusterregistration",
		"--grace-period=0", "--force",
	}
	c := mustLoad(t)
	for _, id := range c.IDs() {
		e, _ := c.Get(id)
		for _, r := range e.Ladder {
			for _, cmd := range r.Commands {
				for _, f := range forbidden {
					if strings.Contains(strings.ToLower(cmd), f) {
						t.Errorf("%s %s: command contains %q: %q", id, r.Rung, f, cmd)
					}
				}
			}
		}
	}
}

// A threshold is one global knob even when several entries document it: the defaults must agree.
func TestSharedThresholdsAgree(t *testing.T) {
	c := mustLoad(t)
	seen := map[string]string{} // name → "default (first entry)"
	for _, id := range c.IDs() {
		e, _ := c.Get(id)
		for _, th := range e.Thresholds {
			if prev, ok := seen[th.Name]; ok {
				if def, _, _ := strings.Cut(prev, " "); def != th.Default {
					t.Errorf("threshold %s: %s has default %q, but %s", th.Name, id, th.Default, prev)
				}
				continue
			}
			seen[th.Name] = th.Default + " (in " + id + ")"
		}
	}
}

// Suggestions rank by how like the ID they are, and leave out IDs that only share letters.
func TestSuggest(t *testing.T) {
	c := mustLoad(t)
	for _, tc := range []struct {
		in   string
		want []string // the first suggestions, in order
		not  []string // never suggested
	}{
		{"helm/release-pendng", []string{"helm/release-pending"}, nil},
		{"helm/relase-pending", []string{"helm/release-pending"}, []string{"suc/image-missing"}},
		{"pending", []string{"helm/release-pending"}, []string{"agent/tls", "crd/missing"}},
		{"crashloop", []string{"pod/crashloop"}, []string{"agent/tls", "crd/missing"}},
		{"image-missing", []string{"suc/image-missing"}, nil},
		{"fleet/agent-stuck", []string{"fleet/agent-upgrade-stuck"}, nil},
		{"pod/crashlop", []string{"pod/crashloop"}, nil},
	} {
		got := c.Suggest(tc.in)
		if len(got) < len(tc.want) || !slices.Equal(got[:len(tc.want)], tc.want) {
			t.Errorf("Suggest(%q) = %v, want %v first", tc.in, got, tc.want)
		}
		for _, n := range tc.not {
			if slices.Contains(got, n) {
				t.Errorf("Suggest(%q) = %v, offers the unrelated %s", tc.in, got, n)
			}
		}
	}
	if got := c.Suggest("nope"); len(got) != 0 {
		t.Errorf("Suggest(nope) = %v, want nothing", got)
	}
}
