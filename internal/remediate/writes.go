package remediate

import "slices"

// GroupKind names a kind as Group/Kind ("" group for the core API).
type GroupKind struct {
	Group string
	Kind  string
}

func (g GroupKind) String() string {
	if g.Group == "" {
		return g.Kind
	}
	return g.Kind + "." + g.Group
}

// actionKinds is, for each action, every kind its steps write (Touches). It is the one list
// of what fix writes: restore refuses a backup entry of any other kind, and a test holds the
// planner to it.
var actionKinds = map[Action][]GroupKind{
	RedeployAgent:          {{"fleet.cattle.io", "Cluster"}},
	ForceSync:              {{"fleet.cattle.io", "Bundle"}, {"fleet.cattle.io", "GitRepo"}},
	RolloutRestart:         {{"apps", "Deployment"}},
	DeleteBundleDeployment: {{"fleet.cattle.io", "BundleDeployment"}},
	HelmRollback:           {{"", "Secret"}},
	HelmMarkFailed:         {{"", "Secret"}},
	PatchPlanImage:         {{"upgrade.cattle.io", "Plan"}},
	DeleteJob:              {{"batch", "Job"}},
	RemoveNodeLabel:        {{"", "Node"}},
	Uncordon:               {{"", "Node"}},
	HelmRewriteAPIs:        {{"", "Secret"}},
	// A migration rewrites objects of the CRD's own kind, unchanged; the trim writes only
	// the CRD's status subresource.
	TrimStoredVersions: {{"apiextensions.k8s.io", "CustomResourceDefinition"}},
	MigrateStorage:     {{"storagemigration.k8s.io", "StorageVersionMigration"}},
}

// actionDeletes is, for each action that deletes, the kinds it deletes: the one list of
// what fix deletes. The executor refuses to delete any other kind, and restore creates
// objects of these kinds only, each only from a journaled delete; every other kind fix
// patches, updates or creates, and restore never creates one.
var actionDeletes = map[Action][]GroupKind{
	DeleteBundleDeployment: {{"fleet.cattle.io", "BundleDeployment"}},
	DeleteJob:              {{"batch", "Job"}},
	// A migration deletes the StorageVersionMigration it created, when no controller
	// finished it; its backup records it as absent, so restore never creates it again.
	MigrateStorage: {{"storagemigration.k8s.io", "StorageVersionMigration"}},
}

// ActionDeletes lists the kinds a step of action a deletes.
func ActionDeletes(a Action) []GroupKind { return slices.Clone(actionDeletes[a]) }

// Deletes reports whether some step of fix deletes objects of this kind.
func Deletes(gk GroupKind) bool {
	for _, kinds := range actionDeletes {
		if slices.Contains(kinds, gk) {
			return true
		}
	}
	return false
}

// DeletedKinds lists every kind Deletes accepts, each once, in a stable order.
func DeletedKinds() []GroupKind {
	var out []GroupKind
	for _, a := range []Action{DeleteBundleDeployment, DeleteJob, MigrateStorage} {
		out = append(out, actionDeletes[a]...)
	}
	return out
}

// ActionKinds lists the kinds a step of action a writes.
func ActionKinds(a Action) []GroupKind { return slices.Clone(actionKinds[a]) }

// Writes reports whether some step of fix writes objects of this kind. A Helm rollback also
// re-applies its target revision's manifest objects, which may be of any kind; those are
// recognised by their Helm ownership, not by kind (see execute's restore).
func Writes(gk GroupKind) bool {
	for _, kinds := range actionKinds {
		if slices.Contains(kinds, gk) {
			return true
		}
	}
	return false
}

// WrittenKinds lists every kind Writes accepts, each once.
func WrittenKinds() []GroupKind {
	var out []GroupKind
	for _, a := range []Action{RedeployAgent, ForceSync, RolloutRestart, DeleteBundleDeployment, HelmRollback, HelmMarkFailed, PatchPlanImage, DeleteJob, RemoveNodeLabel, Uncordon, HelmRewriteAPIs, MigrateStorage, TrimStoredVersions} {
		for _, k := range actionKinds[a] {
			if !slices.Contains(out, k) {
				out = append(out, k)
			}
		}
	}
	return out
}

// SameChange reports whether two steps make the same change: same ID and action, same
// cluster, the same target object (UID included), the same objects written and the same
// values written. A step read back from a journal is only ever run again when the plan made
// from the live cluster holds the same change.
func SameChange(a, b Step) bool {
	if a.ID != b.ID || a.Action != b.Action || a.Cluster != b.Cluster || !sameObject(a.Target, b.Target) {
		return false
	}
	if len(a.Touches) != len(b.Touches) {
		return false
	}
	for i := range a.Touches {
		if !sameObject(a.Touches[i], b.Touches[i]) || a.Touches[i].Create != b.Touches[i].Create {
			return false
		}
	}
	if len(a.Creates) != len(b.Creates) {
		return false
	}
	for i := range a.Creates {
		if !sameObject(a.Creates[i], b.Creates[i]) {
			return false
		}
	}
	// The values written, not those they replace: those move once the step is written.
	if a.Generation != b.Generation || a.Label != b.Label || a.LabelValue != b.LabelValue {
		return false
	}
	if (a.Helm == nil) != (b.Helm == nil) || a.Helm != nil && *a.Helm != *b.Helm {
		return false
	}
	if (a.Image == nil) != (b.Image == nil) || a.Image != nil && (a.Image.Stage != b.Image.Stage || a.Image.To != b.Image.To) {
		return false
	}
	if (a.Rewrite == nil) != (b.Rewrite == nil) || a.Rewrite != nil && (a.Rewrite.Release != b.Rewrite.Release || a.Rewrite.Namespace != b.Rewrite.Namespace ||
		!slices.Equal(a.Rewrite.Revisions, b.Rewrite.Revisions) || a.Rewrite.KubernetesVersion != b.Rewrite.KubernetesVersion) {
		return false
	}
	if (a.Storage == nil) != (b.Storage == nil) || a.Storage != nil && (a.Storage.CRD != b.Storage.CRD || a.Storage.StorageVersion != b.Storage.StorageVersion) {
		return false
	}
	return true
}

func sameObject(a, b Object) bool {
	return a.Cluster == b.Cluster && a.APIVersion == b.APIVersion && a.Kind == b.Kind && a.Namespace == b.Namespace && a.Name == b.Name && a.UID == b.UID
}
