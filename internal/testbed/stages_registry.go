package testbed

import (
	"context"
	"fmt"
	"sort"
	"strings"

	"github.com/google/go-containerregistry/pkg/name"
	v1 "github.com/google/go-containerregistry/pkg/v1"
	"github.com/google/go-containerregistry/pkg/v1/remote"
	"sigs.k8s.io/yaml"
)

// RegistryImage is what the test registry holds under one reference.
type RegistryImage struct {
	// Ref is host/repository:tag.
	Ref string
	// Platforms are the os/arch pairs it runs on ("linux/arm64").
	Platforms []string
	// Index is true for an image index: containerd picks the node's platform from it, or
	// fails the pull. A single image is pulled whatever its architecture and then cannot be
	// executed on another one.
	Index bool
}

// ReadRegistry lists every repository and tag the registry at host serves, with the platforms
// of each: what the stages below take as the truth about which pulls succeed.
func ReadRegistry(ctx context.Context, host string) ([]RegistryImage, error) {
	reg, err := name.NewRegistry(host, name.Insecure)
	if err != nil {
		return nil, err
	}
	repos, err := remote.Catalog(ctx, reg)
	if err != nil {
		return nil, fmt.Errorf("listing the repositories of %s: %w", host, err)
	}
	var out []RegistryImage
	for _, r := range repos {
		repo, err := name.NewRepository(host+"/"+r, name.Insecure)
		if err != nil {
			return nil, err
		}
		tags, err := remote.List(repo, remote.WithContext(ctx))
		if err != nil {
			return nil, fmt.Errorf("listing the tags of %s: %w", repo, err)
		}
		for _, tag := range tags {
			ref := repo.Tag(tag)
			desc, err := remote.Get(ref, remote.WithContext(ctx))
			if err != nil {
				return nil, fmt.Errorf("reading %s: %w", ref, err)
			}
			img := RegistryImage{Ref: host + "/" + r + ":" + tag}
			if desc.MediaType.IsIndex() {
				img.Index = true
				idx, err := desc.ImageIndex()
				if err != nil {
					return nil, err
				}
				m, err := idx.IndexManifest()
				if err != nil {
					return nil, err
				}
				for _, d := range m.Manifests {
					if d.Platform != nil {
						img.Platforms = append(img.Platforms, platform(d.Platform))
					}
				}
			} else {
				im, err := desc.Image()
				if err != nil {
					return nil, err
				}
				cfg, err := im.ConfigFile()
				if err != nil {
					return nil, err
				}
				img.Platforms = []string{platform(&v1.Platform{OS: cfg.OS, Architecture: cfg.Architecture})}
			}
			out = append(out, img)
		}
	}
	sort.Slice(out, func(i, j int) bool { return out[i].Ref < out[j].Ref })
	return out, nil
}

func platform(p *v1.Platform) string { return p.OS + "/" + p.Architecture }

// ImageStages are KWOK stages that play, for the pods on KWOK nodes that run an image of the
// test registry at host, what a kubelet with containerd does with what that registry holds
// (images, the registry's content, read by ReadRegistry; nodes, for their architectures):
//
//   - containers start one at a time, init containers first, in order, as a kubelet runs them;
//   - an image the registry does not hold fails its pull with containerd's NotFound error,
//     the container waits in ErrImagePull, then in ImagePullBackOff with the kubelet's back-off
//     message, and back again;
//   - an image index without the node's platform fails its pull with containerd's "no match
//     for platform in manifest";
//   - a single image of another architecture is pulled and its process cannot be executed: the
//     container terminates with exit code 255 (runc's "exec <binary>: exec format error"); a
//     pod that never restarts fails, others go into CrashLoopBackOff;
//   - a container named cordon or drain (system-upgrade-controller's kubectl init containers)
//     that completes has cordoned its node: KWOK runs no container, so the stage performs the
//     effect of `kubectl cordon <node>` (drain's evictions are not played).
//
// Images of other registries are taken as pulled. Containers with no problem then run and
// complete through KWOK's default stages. These stages outweigh the defaults, so they are the
// ones chosen whenever both match.
func ImageStages(host string, images []RegistryImage, nodes []Node) ([][]byte, error) {
	var held, index, arch strings.Builder
	for _, im := range images {
		fmt.Fprintf(&held, " %q %q", im.Ref, strings.Join(im.Platforms, ","))
		if im.Index {
			fmt.Fprintf(&index, " %q \"index\"", im.Ref)
		}
	}
	for _, n := range nodes {
		a := n.Arch
		if a == "" {
			a = "amd64"
		}
		fmt.Fprintf(&arch, " %q %q", n.Name, "linux/"+a)
	}
	prelude := fmt.Sprintf(`{{ $held := dict%s }}{{ $index := dict%s }}{{ $arch := dict%s }}{{ $host := %q }}{{ $plat := get $arch .spec.nodeName }}{{ $now := Now }}{{ $root := . }}
`, held.String(), index.String(), arch.String(), host+"/")
	// verdict sets $v for the image $img: ok, missing, noplatform or exec.
	verdict := `{{ $v := "ok" }}{{ if hasPrefix $host $img }}{{ if not (hasKey $held $img) }}{{ $v = "missing" }}{{ else if not (has $plat (splitList "," (get $held $img))) }}{{ if hasKey $index $img }}{{ $v = "noplatform" }}{{ else }}{{ $v = "exec" }}{{ end }}{{ end }}{{ end }}`
	pullMsg := `{{ if eq $v "missing" }}rpc error: code = NotFound desc = failed to pull and unpack image \"{{ $img }}\": failed to resolve reference \"{{ $img }}\": {{ $img }}: not found{{ else }}rpc error: code = NotFound desc = failed to pull and unpack image \"{{ $img }}\": no match for platform in manifest: not found{{ end }}`
	binary := `{{ $bin := printf "/usr/bin/%s" (base (regexReplaceAll ":[^:/]*$" $img "")) }}{{ if $c.command }}{{ $bin = index $c.command 0 }}{{ end }}`

	// One container per step: the first init container not completed, else the containers.
	step := prelude + `{{ $next := -1 }}{{ range $i, $c := .spec.initContainers }}{{ $st := index $root.status.initContainerStatuses $i }}{{ if and (lt $next 0) (not (and $st.state.terminated (eq $st.state.terminated.reason "Completed"))) }}{{ $next = $i }}{{ end }}{{ end }}
{{ $failed := false }}{{ $waiting := false }}
{{ if .spec.initContainers }}
initContainerStatuses:
{{ range $i, $c := .spec.initContainers }}{{ $img := $c.image }}` + verdict + binary + `
- name: {{ $c.name | Quote }}
  image: {{ $img | Quote }}
  restartCount: 0
  {{ if lt $i $next }}ready: true
  started: false
  state: {{ (index $root.status.initContainerStatuses $i).state | toJson }}
  {{ else if or (gt $i $next) (lt $next 0) }}{{ if lt $next 0 }}ready: true
  started: false
  state: {{ (index $root.status.initContainerStatuses $i).state | toJson }}
  {{ else }}ready: false
  started: false
  state:
    waiting:
      reason: PodInitializing{{ end }}
  {{ else if eq $v "ok" }}ready: true
  started: false
  state:
    terminated:
      exitCode: 0
      reason: Completed
      startedAt: {{ $now | Quote }}
      finishedAt: {{ $now | Quote }}
  {{ else if eq $v "exec" }}{{ $failed = true }}ready: false
  started: false
  state:
    terminated:
      exitCode: 255
      reason: Error
      startedAt: {{ $now | Quote }}
      finishedAt: {{ $now | Quote }}
  {{ else }}{{ $waiting = true }}ready: false
  started: false
  state:
    waiting:
      reason: ErrImagePull
      message: "` + pullMsg + `"
  {{ end }}
{{ end }}{{ end }}
{{ if lt $next 0 }}
{{ $allOK := true }}{{ $crash := false }}
containerStatuses:
{{ range $i, $c := .spec.containers }}{{ $img := $c.image }}` + verdict + binary + `
- name: {{ $c.name | Quote }}
  image: {{ $img | Quote }}
  {{ if eq $v "ok" }}ready: true
  started: true
  restartCount: 0
  state:
    running:
      startedAt: {{ $now | Quote }}
  {{ else if eq $v "exec" }}{{ $allOK = false }}ready: false
  started: false
  {{ if eq $root.spec.restartPolicy "Never" }}{{ $failed = true }}restartCount: 0
  state:
    terminated:
      exitCode: 255
      reason: Error
      startedAt: {{ $now | Quote }}
      finishedAt: {{ $now | Quote }}
  {{ else }}{{ $crash = true }}restartCount: 1
  lastState:
    terminated:
      exitCode: 255
      reason: Error
      startedAt: {{ $now | Quote }}
      finishedAt: {{ $now | Quote }}
  state:
    waiting:
      reason: CrashLoopBackOff
      message: "back-off 10s restarting failed container={{ $c.name }} pod={{ $root.metadata.name }}_{{ $root.metadata.namespace }}({{ $root.metadata.uid }})"
  {{ end }}
  {{ else }}{{ $allOK = false }}ready: false
  started: false
  restartCount: 0
  state:
    waiting:
      reason: ErrImagePull
      message: "` + pullMsg + `"
  {{ end }}
{{ end }}
conditions:
- type: Initialized
  status: "True"
  reason: ""
  lastProbeTime: null
  lastTransitionTime: {{ $now | Quote }}
{{ if $allOK }}- type: Ready
  status: "True"
  reason: ""
  message: ""
  lastProbeTime: null
  lastTransitionTime: {{ $now | Quote }}
- type: ContainersReady
  status: "True"
  reason: ""
  message: ""
  lastProbeTime: null
  lastTransitionTime: {{ $now | Quote }}
phase: Running
{{ else if $failed }}phase: Failed
{{ else if $crash }}phase: Running
{{ end }}
startTime: {{ $now | Quote }}
{{ else if $failed }}
phase: Failed
{{ end }}
`
	// The node the cordon or drain container cordons when it completes.
	cordon := prelude + `{{ $next := -1 }}{{ range $i, $c := .spec.initContainers }}{{ $st := index $root.status.initContainerStatuses $i }}{{ if and (lt $next 0) (not (and $st.state.terminated (eq $st.state.terminated.reason "Completed"))) }}{{ $next = $i }}{{ end }}{{ end }}
{{ $cordon := false }}{{ if ge $next 0 }}{{ $c := index .spec.initContainers $next }}{{ $img := $c.image }}` + verdict + `{{ if and (eq $v "ok") (has $c.name (list "cordon" "drain")) }}{{ $cordon = true }}{{ end }}{{ end }}
apiVersion: v1
kind: Node
metadata:
  name: {{ .spec.nodeName | Quote }}
{{ if $cordon }}spec:
  unschedulable: true
{{ end }}`
	// Back-off after a failed pull (the message carries the pull error), and the next try.
	backoff := prelude + `containerStatuses:
{{ range $i, $s := .status.containerStatuses }}{{ if and $s.state.waiting (eq $s.state.waiting.reason "ErrImagePull") }}{{ $s = set $s "state" (dict "waiting" (dict "reason" "ImagePullBackOff" "message" (printf "Back-off pulling image %q: ErrImagePull: %s" $s.image $s.state.waiting.message))) }}{{ end }}
- {{ $s | toJson }}
{{ end }}
{{ if .status.initContainerStatuses }}initContainerStatuses:
{{ range $i, $s := .status.initContainerStatuses }}{{ if and $s.state.waiting (eq $s.state.waiting.reason "ErrImagePull") }}{{ $s = set $s "state" (dict "waiting" (dict "reason" "ImagePullBackOff" "message" (printf "Back-off pulling image %q: ErrImagePull: %s" $s.image $s.state.waiting.message))) }}{{ end }}
- {{ $s | toJson }}
{{ end }}{{ end }}`
	retry := prelude + `containerStatuses:
{{ range $i, $s := .status.containerStatuses }}{{ if and $s.state.waiting (eq $s.state.waiting.reason "ImagePullBackOff") }}{{ $s = set $s "state" (dict "waiting" (dict "reason" "ErrImagePull" "message" (trimPrefix (printf "Back-off pulling image %q: ErrImagePull: " $s.image) $s.state.waiting.message))) }}{{ end }}
- {{ $s | toJson }}
{{ end }}
{{ if .status.initContainerStatuses }}initContainerStatuses:
{{ range $i, $s := .status.initContainerStatuses }}{{ if and $s.state.waiting (eq $s.state.waiting.reason "ImagePullBackOff") }}{{ $s = set $s "state" (dict "waiting" (dict "reason" "ErrImagePull" "message" (trimPrefix (printf "Back-off pulling image %q: ErrImagePull: " $s.image) $s.state.waiting.message))) }}{{ end }}
- {{ $s | toJson }}
{{ end }}{{ end }}`

	usesHost := fmt.Sprintf(`[(.spec.initContainers // [])[].image, .spec.containers[].image] | map(select(startswith(%q))) | .[0]`, host+"/")
	waitingIn := func(reason string) string {
		return fmt.Sprintf(`[(.status.initContainerStatuses // [])[], (.status.containerStatuses // [])[]] | map(select(.state.waiting.reason == %q)) | .[0].name`, reason)
	}
	base := []map[string]any{
		{"key": ".metadata.deletionTimestamp", "operator": "DoesNotExist"},
		{"key": ".status.podIP", "operator": "Exists"},
		{"key": ".status.phase", "operator": "In", "values": []string{"Pending"}},
		{"key": usesHost, "operator": "Exists"},
	}
	with := func(extra ...map[string]any) []map[string]any {
		return append(append([]map[string]any{}, base...), extra...)
	}
	stage := func(name string, delayMS, jitterMS int64, exprs []map[string]any, steps []map[string]any) ([]byte, error) {
		return yaml.Marshal(map[string]any{
			"apiVersion": "kwok.x-k8s.io/v1alpha1",
			"kind":       "Stage",
			"metadata":   map[string]any{"name": name},
			"spec": map[string]any{
				"resourceRef": map[string]any{"apiGroup": "v1", "kind": "Pod"},
				"selector":    map[string]any{"matchExpressions": exprs},
				// Far above the default stages' weight of 1: chosen whenever both match.
				"weight": 1 << 30,
				"delay":  map[string]any{"durationMilliseconds": delayMS, "jitterDurationMilliseconds": jitterMS},
				"steps":  steps,
			},
		})
	}
	statusPatch := func(tpl string) map[string]any {
		return map[string]any{"patch": map[string]any{"subresource": "status", "root": "status", "template": tpl}}
	}
	var out [][]byte
	for _, s := range []struct {
		name          string
		delay, jitter int64
		exprs         []map[string]any
		steps         []map[string]any
	}{
		{"registry-pod-step", 1000, 1000, with(
			map[string]any{"key": waitingIn("ErrImagePull"), "operator": "DoesNotExist"},
			map[string]any{"key": waitingIn("ImagePullBackOff"), "operator": "DoesNotExist"},
		), []map[string]any{statusPatch(step), {"apply": map[string]any{"template": cordon, "type": "merge"}}}},
		{"registry-pod-pull-backoff", 3000, 2000, with(
			map[string]any{"key": waitingIn("ErrImagePull"), "operator": "Exists"},
		), []map[string]any{statusPatch(backoff)}},
		{"registry-pod-pull-retry", 40000, 20000, with(
			map[string]any{"key": waitingIn("ImagePullBackOff"), "operator": "Exists"},
		), []map[string]any{statusPatch(retry)}},
	} {
		b, err := stage(s.name, s.delay, s.jitter, s.exprs, s.steps)
		if err != nil {
			return nil, err
		}
		out = append(out, b)
	}
	return out, nil
}
