package main

import (
	"fmt"
	"strings"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
)

// u is an untyped object (used for CustomResourceDefinitions, whose Go types are
// not among this module's dependencies).
type u map[string]any

func (o u) GetName() string {
	m, _ := o["metadata"].(map[string]any)
	s, _ := m["name"].(string)
	return s
}
func (o u) GetNamespace() string {
	m, _ := o["metadata"].(map[string]any)
	s, _ := m["namespace"].(string)
	return s
}

func (o *out) meta(kind, name, ns, created string, labels, annotations map[string]string) metav1.ObjectMeta {
	return metav1.ObjectMeta{
		Name:              name,
		Namespace:         ns,
		UID:               uid(o.id + "|" + kind + "|" + ns + "|" + name),
		ResourceVersion:   o.nextRV(),
		CreationTimestamp: mt(created),
		Labels:            labels,
		Annotations:       annotations,
	}
}

func tm(apiVersion, kind string) metav1.TypeMeta {
	return metav1.TypeMeta{APIVersion: apiVersion, Kind: kind}
}

func ownerRef(apiVersion, kind, name string, id string) metav1.OwnerReference {
	return metav1.OwnerReference{
		APIVersion:         apiVersion,
		Kind:               kind,
		Name:               name,
		UID:                typesUID(id),
		Controller:         ptr(true),
		BlockOwnerDeletion: ptr(true),
	}
}

// ---------------------------------------------------------------------------
// namespaces

func (o *out) namespace(name, created string, labels, annotations map[string]string) *corev1.Namespace {
	l := map[string]string{"kubernetes.io/metadata.name": name}
	for k, v := range labels {
		l[k] = v
	}
	ns := &corev1.Namespace{
		TypeMeta:   tm("v1", "Namespace"),
		ObjectMeta: o.meta("Namespace", name, "", created, l, annotations),
		Spec:       corev1.NamespaceSpec{Finalizers: []corev1.FinalizerName{corev1.FinalizerKubernetes}},
		Status:     corev1.NamespaceStatus{Phase: corev1.NamespaceActive},
	}
	o.add("namespaces", ns)
	return ns
}

// ---------------------------------------------------------------------------
// nodes

type nodeSpec struct {
	name, ip, arch, osImage, kernel, kubelet, runtime string
	k3s                                               bool
	roles                                             []string
	cpu                                               int
	memKi                                             int64
	created, readySince, heartbeat                    string
	taints                                            []corev1.Taint
	podCIDR                                           string
}

func (o *out) node(n nodeSpec) *corev1.Node {
	dist := "rke2"
	if n.k3s {
		dist = "k3s"
	}
	labels := map[string]string{
		"beta.kubernetes.io/arch":          n.arch,
		"beta.kubernetes.io/instance-type": dist,
		"beta.kubernetes.io/os":            "linux",
		"kubernetes.io/arch":               n.arch,
		"kubernetes.io/hostname":           n.name,
		"kubernetes.io/os":                 "linux",
		"node.kubernetes.io/instance-type": dist,
	}
	for _, r := range n.roles {
		labels["node-role.kubernetes.io/"+r] = "true"
	}
	ann := map[string]string{
		"node.alpha.kubernetes.io/ttl":                           "0",
		"volumes.kubernetes.io/controller-managed-attach-detach": "true",
		dist + ".io/hostname":                                    n.name,
		dist + ".io/internal-ip":                                 n.ip,
	}
	if n.k3s {
		ann["flannel.alpha.coreos.com/backend-type"] = "vxlan"
		ann["flannel.alpha.coreos.com/public-ip"] = n.ip
		ann["k3s.io/node-args"] = `["server","--write-kubeconfig-mode","0644"]`
	} else {
		ann["rke2.io/node-args"] = `["server","--node-label","cattle.io/os=linux"]`
		labels["cattle.io/os"] = "linux"
	}
	memCap := resource.MustParse(fmt.Sprintf("%dKi", n.memKi))
	memAlloc := resource.MustParse(fmt.Sprintf("%dKi", n.memKi-102400))
	cap := corev1.ResourceList{
		corev1.ResourceCPU:              resource.MustParse(fmt.Sprintf("%d", n.cpu)),
		corev1.ResourceEphemeralStorage: resource.MustParse("102687672Ki"),
		"hugepages-1Gi":                 resource.MustParse("0"),
		"hugepages-2Mi":                 resource.MustParse("0"),
		corev1.ResourceMemory:           memCap,
		corev1.ResourcePods:             resource.MustParse("110"),
	}
	alloc := corev1.ResourceList{
		corev1.ResourceCPU:              resource.MustParse(fmt.Sprintf("%d", n.cpu)),
		corev1.ResourceEphemeralStorage: resource.MustParse("99893683935"),
		"hugepages-1Gi":                 resource.MustParse("0"),
		"hugepages-2Mi":                 resource.MustParse("0"),
		corev1.ResourceMemory:           memAlloc,
		corev1.ResourcePods:             resource.MustParse("110"),
	}
	hb := mt(n.heartbeat)
	cond := func(t corev1.NodeConditionType, st corev1.ConditionStatus, reason, msg, since string) corev1.NodeCondition {
		return corev1.NodeCondition{Type: t, Status: st, LastHeartbeatTime: hb, LastTransitionTime: mt(since), Reason: reason, Message: msg}
	}
	node := &corev1.Node{
		TypeMeta:   tm("v1", "Node"),
		ObjectMeta: o.meta("Node", n.name, "", n.created, labels, ann),
		Spec: corev1.NodeSpec{
			PodCIDR:    n.podCIDR,
			PodCIDRs:   []string{n.podCIDR},
			ProviderID: dist + "://" + n.name,
			Taints:     n.taints,
		},
		Status: corev1.NodeStatus{
			Capacity:    cap,
			Allocatable: alloc,
			Conditions: []corev1.NodeCondition{
				cond(corev1.NodeMemoryPressure, corev1.ConditionFalse, "KubeletHasSufficientMemory", "kubelet has sufficient memory available", n.readySince),
				cond(corev1.NodeDiskPressure, corev1.ConditionFalse, "KubeletHasNoDiskPressure", "kubelet has no disk pressure", n.readySince),
				cond(corev1.NodePIDPressure, corev1.ConditionFalse, "KubeletHasSufficientPID", "kubelet has sufficient PID available", n.readySince),
				cond(corev1.NodeReady, corev1.ConditionTrue, "KubeletReady", "kubelet is posting ready status", n.readySince),
			},
			Addresses: []corev1.NodeAddress{
				{Type: corev1.NodeInternalIP, Address: n.ip},
				{Type: corev1.NodeHostName, Address: n.name},
			},
			DaemonEndpoints: corev1.NodeDaemonEndpoints{KubeletEndpoint: corev1.DaemonEndpoint{Port: 10250}},
			NodeInfo: corev1.NodeSystemInfo{
				MachineID:               sha256hex("machine-id:" + n.name)[:32],
				SystemUUID:              strings.ToUpper(string(uid("system-uuid:" + n.name))),
				BootID:                  string(uid("boot-id:" + n.name + n.readySince)),
				KernelVersion:           n.kernel,
				OSImage:                 n.osImage,
				ContainerRuntimeVersion: n.runtime,
				KubeletVersion:          n.kubelet,
				OperatingSystem:         "linux",
				Architecture:            n.arch,
			},
		},
	}
	o.add("nodes", node)
	return node
}

// ---------------------------------------------------------------------------
// fleet-agent workload

type agentOpts struct {
	ns          string // agent namespace
	scope       string // AGENT_SCOPE (spec.agentNamespace, only for non-default namespaces)
	version     string // v0.16.0
	resources   *corev1.ResourceRequirements
	hostNetwork bool
}

// agentPodTemplate mirrors agentApp() in rancher/fleet
// internal/cmd/controller/agentmanagement/agent/manifest.go, with API server defaults.
func agentPodTemplate(a agentOpts) corev1.PodTemplateSpec {
	c := corev1.Container{
		Name:    "fleet-agent",
		Image:   "rancher/fleet-agent:" + a.version,
		Command: []string{"fleetagent"},
		Env: []corev1.EnvVar{
			{Name: "BUNDLEDEPLOYMENT_RECONCILER_WORKERS", Value: "50"},
			{Name: "DRIFT_RECONCILER_WORKERS", Value: "50"},
			{Name: "NAMESPACE", ValueFrom: &corev1.EnvVarSource{FieldRef: &corev1.ObjectFieldSelector{APIVersion: "v1", FieldPath: "metadata.namespace"}}},
			{Name: "AGENT_SCOPE", Value: a.scope},
			{Name: "CHECKIN_INTERVAL", Value: "15m0s"},
			{Name: "CATTLE_ELECTION_LEASE_DURATION", Value: "30s"},
			{Name: "CATTLE_ELECTION_RETRY_PERIOD", Value: "10s"},
			{Name: "CATTLE_ELECTION_RENEW_DEADLINE", Value: "25s"},
		},
		VolumeMounts: []corev1.VolumeMount{
			{Name: "kube", MountPath: "/.kube"},
			{Name: "tmp", MountPath: "/tmp"},
		},
		ImagePullPolicy:          corev1.PullIfNotPresent,
		TerminationMessagePath:   "/dev/termination-log",
		TerminationMessagePolicy: corev1.TerminationMessageReadFile,
		SecurityContext: &corev1.SecurityContext{
			AllowPrivilegeEscalation: ptr(false),
			ReadOnlyRootFilesystem:   ptr(true),
			Privileged:               ptr(false),
			Capabilities:             &corev1.Capabilities{Drop: []corev1.Capability{"ALL"}},
		},
	}
	if a.resources != nil {
		c.Resources = *a.resources
	}
	return corev1.PodTemplateSpec{
		ObjectMeta: metav1.ObjectMeta{Labels: map[string]string{"app": "fleet-agent"}},
		Spec: corev1.PodSpec{
			ServiceAccountName:            "fleet-agent",
			DeprecatedServiceAccount:      "fleet-agent",
			Containers:                    []corev1.Container{c},
			HostNetwork:                   a.hostNetwork,
			RestartPolicy:                 corev1.RestartPolicyAlways,
			TerminationGracePeriodSeconds: ptr(int64(30)),
			DNSPolicy:                     corev1.DNSClusterFirst,
			SchedulerName:                 corev1.DefaultSchedulerName,
			NodeSelector:                  map[string]string{"kubernetes.io/os": "linux"},
			SecurityContext: &corev1.PodSecurityContext{
				RunAsNonRoot: ptr(true),
				RunAsUser:    ptr(int64(1000)),
				RunAsGroup:   ptr(int64(1000)),
			},
			Affinity: &corev1.Affinity{NodeAffinity: &corev1.NodeAffinity{
				PreferredDuringSchedulingIgnoredDuringExecution: []corev1.PreferredSchedulingTerm{{
					Weight: 1,
					Preference: corev1.NodeSelectorTerm{MatchExpressions: []corev1.NodeSelectorRequirement{{
						Key: "fleet.cattle.io/agent", Operator: corev1.NodeSelectorOpIn, Values: []string{"true"},
					}}},
				}},
			}},
			Tolerations: []corev1.Toleration{
				{Key: "node.cloudprovider.kubernetes.io/uninitialized", Operator: corev1.TolerationOpEqual, Value: "true", Effect: corev1.TaintEffectNoSchedule},
				{Key: "cattle.io/os", Operator: corev1.TolerationOpEqual, Value: "linux", Effect: corev1.TaintEffectNoSchedule},
			},
			Volumes: []corev1.Volume{
				{Name: "kube", VolumeSource: corev1.VolumeSource{EmptyDir: &corev1.EmptyDirVolumeSource{}}},
				{Name: "tmp", VolumeSource: corev1.VolumeSource{EmptyDir: &corev1.EmptyDirVolumeSource{}}},
			},
		},
	}
}

// helmOwnedMeta adds the labels and annotations Helm and Fleet's post-renderer put on
// objects of a Fleet-deployed release.
func helmOwnedMeta(m *metav1.ObjectMeta, release, releaseNS, setID string) {
	if m.Labels == nil {
		m.Labels = map[string]string{}
	}
	if m.Annotations == nil {
		m.Annotations = map[string]string{}
	}
	m.Labels["app.kubernetes.io/managed-by"] = "Helm"
	m.Labels["objectset.rio.cattle.io/hash"] = sha1hex(setID)
	m.Annotations["meta.helm.sh/release-name"] = release
	m.Annotations["meta.helm.sh/release-namespace"] = releaseNS
	m.Annotations["objectset.rio.cattle.io/id"] = setID
}

type rsSpec struct {
	hash     string
	revision string
	tpl      corev1.PodTemplateSpec
	created  string
	replicas int32
	ready    int32
}

func (o *out) replicaSet(dep *appsv1.Deployment, r rsSpec) *appsv1.ReplicaSet {
	tpl := *r.tpl.DeepCopy()
	tpl.Labels["pod-template-hash"] = r.hash
	labels := map[string]string{"app": dep.Spec.Template.Labels["app"], "pod-template-hash": r.hash}
	ann := map[string]string{
		"deployment.kubernetes.io/desired-replicas": "1",
		"deployment.kubernetes.io/max-replicas":     "2",
		"deployment.kubernetes.io/revision":         r.revision,
		"meta.helm.sh/release-name":                 dep.Annotations["meta.helm.sh/release-name"],
		"meta.helm.sh/release-namespace":            dep.Annotations["meta.helm.sh/release-namespace"],
		"objectset.rio.cattle.io/id":                dep.Annotations["objectset.rio.cattle.io/id"],
	}
	if ann["meta.helm.sh/release-name"] == "" {
		delete(ann, "meta.helm.sh/release-name")
		delete(ann, "meta.helm.sh/release-namespace")
	}
	if dep.Spec.Strategy.Type == appsv1.RecreateDeploymentStrategyType {
		ann["deployment.kubernetes.io/max-replicas"] = "1"
	}
	m := o.meta("ReplicaSet", dep.Name+"-"+r.hash, dep.Namespace, r.created, labels, ann)
	m.Generation = 1
	if r.replicas == 0 {
		m.Generation = 2
	}
	m.OwnerReferences = []metav1.OwnerReference{ownerRef("apps/v1", "Deployment", dep.Name, string(dep.UID))}
	rs := &appsv1.ReplicaSet{
		TypeMeta:   tm("apps/v1", "ReplicaSet"),
		ObjectMeta: m,
		Spec: appsv1.ReplicaSetSpec{
			Replicas: ptr(r.replicas),
			Selector: &metav1.LabelSelector{MatchLabels: map[string]string{"app": dep.Spec.Template.Labels["app"], "pod-template-hash": r.hash}},
			Template: tpl,
		},
		Status: appsv1.ReplicaSetStatus{
			Replicas:             r.replicas,
			FullyLabeledReplicas: r.replicas,
			ReadyReplicas:        r.ready,
			AvailableReplicas:    r.ready,
			ObservedGeneration:   m.Generation,
		},
	}
	o.add("replicasets", rs)
	return rs
}

type podState struct {
	name     string
	created  string
	node     string
	hostIP   string
	podIP    string
	phase    corev1.PodPhase
	started  string // container start (running)
	restarts int32
	ready    bool
	// waiting / lastState for crashloops
	waiting    *corev1.ContainerStateWaiting
	lastTerm   *corev1.ContainerStateTerminated
	terminated *corev1.ContainerStateTerminated // current state terminated (Jobs)
	// pending (unschedulable)
	unschedulable string // message
	schedSince    string
	readySince    string
	imageID       string
}

// pod builds a Pod from a template the way the API server and kubelet complete it.
func (o *out) pod(rsOwner metav1.OwnerReference, tpl corev1.PodTemplateSpec, ns string, s podState) *corev1.Pod {
	spec := *tpl.Spec.DeepCopy()
	labels := map[string]string{}
	for k, v := range tpl.Labels {
		labels[k] = v
	}
	m := o.meta("Pod", s.name, ns, s.created, labels, tpl.Annotations)
	m.GenerateName = s.name[:strings.LastIndex(s.name, "-")+1]
	m.OwnerReferences = []metav1.OwnerReference{rsOwner}
	tokenVol := "kube-api-access-" + randFrom("vol"+s.name, k8sAlphabet, 5)
	spec.Volumes = append(spec.Volumes, corev1.Volume{Name: tokenVol, VolumeSource: corev1.VolumeSource{Projected: &corev1.ProjectedVolumeSource{
		DefaultMode: ptr(int32(420)),
		Sources: []corev1.VolumeProjection{
			{ServiceAccountToken: &corev1.ServiceAccountTokenProjection{ExpirationSeconds: ptr(int64(3607)), Path: "token"}},
			{ConfigMap: &corev1.ConfigMapProjection{LocalObjectReference: corev1.LocalObjectReference{Name: "kube-root-ca.crt"}, Items: []corev1.KeyToPath{{Key: "ca.crt", Path: "ca.crt"}}}},
			{DownwardAPI: &corev1.DownwardAPIProjection{Items: []corev1.DownwardAPIVolumeFile{{Path: "namespace", FieldRef: &corev1.ObjectFieldSelector{APIVersion: "v1", FieldPath: "metadata.namespace"}}}}},
		},
	}}})
	for i := range spec.Containers {
		spec.Containers[i].VolumeMounts = append(spec.Containers[i].VolumeMounts, corev1.VolumeMount{Name: tokenVol, ReadOnly: true, MountPath: "/var/run/secrets/kubernetes.io/serviceaccount"})
	}
	spec.Tolerations = append(spec.Tolerations,
		corev1.Toleration{Key: "node.kubernetes.io/not-ready", Operator: corev1.TolerationOpExists, Effect: corev1.TaintEffectNoExecute, TolerationSeconds: ptr(int64(300))},
		corev1.Toleration{Key: "node.kubernetes.io/unreachable", Operator: corev1.TolerationOpExists, Effect: corev1.TaintEffectNoExecute, TolerationSeconds: ptr(int64(300))},
	)
	spec.NodeName = s.node
	spec.EnableServiceLinks = ptr(true)
	spec.PreemptionPolicy = ptr(corev1.PreemptLowerPriority)
	spec.Priority = ptr(int32(0))
	if spec.SecurityContext == nil {
		spec.SecurityContext = &corev1.PodSecurityContext{}
	}

	qos := corev1.PodQOSBestEffort
	if len(spec.Containers[0].Resources.Requests) > 0 {
		qos = corev1.PodQOSBurstable
	}
	st := corev1.PodStatus{Phase: s.phase, QOSClass: qos}
	switch {
	case s.unschedulable != "":
		st.Conditions = []corev1.PodCondition{{
			Type: corev1.PodScheduled, Status: corev1.ConditionFalse, LastTransitionTime: mt(s.schedSince),
			Reason: corev1.PodReasonUnschedulable, Message: s.unschedulable,
		}}
	default:
		readyStatus := corev1.ConditionTrue
		ready := mt(s.readySince)
		reason, msg := "", ""
		if !s.ready {
			readyStatus = corev1.ConditionFalse
			if s.phase == corev1.PodSucceeded {
				reason = "PodCompleted"
			} else {
				reason = "ContainersNotReady"
				msg = "containers with unready status: [" + spec.Containers[0].Name + "]"
			}
		}
		sched := mt(s.schedSince)
		st.Conditions = []corev1.PodCondition{
			{Type: "PodReadyToStartContainers", Status: corev1.ConditionTrue, LastTransitionTime: sched},
			{Type: corev1.PodInitialized, Status: corev1.ConditionTrue, LastTransitionTime: sched},
			{Type: corev1.PodReady, Status: readyStatus, LastTransitionTime: ready, Reason: reason, Message: msg},
			{Type: corev1.ContainersReady, Status: readyStatus, LastTransitionTime: ready, Reason: reason, Message: msg},
			{Type: corev1.PodScheduled, Status: corev1.ConditionTrue, LastTransitionTime: sched},
		}
		if s.phase == corev1.PodSucceeded {
			st.Conditions[0].Status = corev1.ConditionFalse
			st.Conditions[0].LastTransitionTime = ready
			st.Conditions[1].Reason = "PodCompleted"
		}
		st.HostIP = s.hostIP
		st.HostIPs = []corev1.HostIP{{IP: s.hostIP}}
		st.PodIP = s.podIP
		st.PodIPs = []corev1.PodIP{{IP: s.podIP}}
		st.StartTime = ptr(sched)
		for _, c0 := range spec.Containers {
			cs := corev1.ContainerStatus{
				Name:         c0.Name,
				Image:        "docker.io/" + c0.Image,
				ImageID:      s.imageID,
				ContainerID:  "containerd://" + sha256hex("cid:"+s.name+c0.Name+s.started),
				Ready:        s.ready,
				RestartCount: s.restarts,
				Started:      ptr(s.ready),
			}
			if strings.HasPrefix(c0.Image, "registry.") {
				cs.Image = c0.Image
			}
			if s.imageID == "" {
				cs.ImageID = "docker.io/" + strings.Split(c0.Image, ":")[0] + "@sha256:" + sha256hex("img:"+c0.Image)
				if strings.HasPrefix(c0.Image, "registry.") {
					cs.ImageID = strings.Split(c0.Image, ":")[0] + "@sha256:" + sha256hex("img:"+c0.Image)
				}
			}
			for _, vm := range c0.VolumeMounts {
				cs.VolumeMounts = append(cs.VolumeMounts, corev1.VolumeMountStatus{Name: vm.Name, MountPath: vm.MountPath, ReadOnly: vm.ReadOnly, RecursiveReadOnly: ptrRRO(vm.ReadOnly)})
			}
			switch {
			case s.waiting != nil:
				cs.State = corev1.ContainerState{Waiting: s.waiting}
				cs.Started = ptr(false)
			case s.terminated != nil:
				t := *s.terminated
				t.ContainerID = cs.ContainerID
				cs.State = corev1.ContainerState{Terminated: &t}
				cs.Started = ptr(false)
			default:
				cs.State = corev1.ContainerState{Running: &corev1.ContainerStateRunning{StartedAt: mt(s.started)}}
			}
			if s.lastTerm != nil {
				t := *s.lastTerm
				t.ContainerID = "containerd://" + sha256hex("cid-prev:"+s.name+c0.Name)
				cs.LastTerminationState = corev1.ContainerState{Terminated: &t}
				if s.waiting != nil {
					cs.ContainerID = t.ContainerID // the kubelet reports the last container while waiting
				}
			}
			if len(c0.Resources.Requests) > 0 || len(c0.Resources.Limits) > 0 {
				cs.Resources = c0.Resources.DeepCopy()
			}
			if spec.SecurityContext.RunAsUser != nil {
				cs.User = &corev1.ContainerUser{Linux: &corev1.LinuxContainerUser{UID: *spec.SecurityContext.RunAsUser, GID: 1000, SupplementalGroups: []int64{1000}}}
			}
			st.ContainerStatuses = append(st.ContainerStatuses, cs)
		}
	}
	p := &corev1.Pod{TypeMeta: tm("v1", "Pod"), ObjectMeta: m, Spec: spec, Status: st}
	o.add("pods", p)
	return p
}

func ptrRRO(ro bool) *corev1.RecursiveReadOnlyMode {
	if !ro {
		return nil
	}
	return ptr(corev1.RecursiveReadOnlyDisabled)
}

// ---------------------------------------------------------------------------
// events

type evSpec struct {
	ns        string
	obj       corev1.ObjectReference
	typ       string // Normal | Warning
	reason    string
	msg       string
	component string // kubelet | default-scheduler | job-controller | ...
	host      string
	first     string
	last      string
	count     int32
	// new-style (events.k8s.io/v1 recorder, e.g. the scheduler): eventTime + series
	eventsV1 bool
	action   string
}

// eventName mirrors the recorder: <object>.<hex unix nanos of the first occurrence>.
func eventName(obj string, first time.Time) string {
	return fmt.Sprintf("%s.%x", obj, first.UnixNano())
}

func (o *out) event(e evSpec) *corev1.Event {
	first := mustTime(e.first)
	var j int64
	for _, c := range sha256hex(e.reason + e.msg + e.obj.Name + e.obj.FieldPath)[:8] {
		j = j*16 + int64(strings.IndexRune("0123456789abcdef", c))
	}
	first = first.Add(time.Duration(j%999_000_000) * time.Nanosecond)
	ev := &corev1.Event{
		TypeMeta:       tm("v1", "Event"),
		ObjectMeta:     o.meta("Event", eventName(e.obj.Name, first), e.ns, e.first, nil, nil),
		InvolvedObject: e.obj,
		Reason:         e.reason,
		Message:        e.msg,
		Type:           e.typ,
	}
	if e.eventsV1 {
		// Written through events.k8s.io/v1: the deprecated core/v1 fields stay empty.
		ev.EventTime = metav1.NewMicroTime(first)
		ev.ReportingController = e.component
		ev.ReportingInstance = e.component + "-" + e.host
		ev.Action = e.action
		if e.count > 1 {
			ev.Series = &corev1.EventSeries{Count: e.count, LastObservedTime: metav1.NewMicroTime(mustTime(e.last))}
		}
		return ev
	}
	ev.Source = corev1.EventSource{Component: e.component, Host: e.host}
	ev.FirstTimestamp = mt(e.first)
	ev.LastTimestamp = mt(e.last)
	ev.Count = e.count
	ev.ReportingController = e.component
	ev.ReportingInstance = e.host
	if e.component != "kubelet" {
		ev.ReportingInstance = ""
	}
	return ev
}

func objRef(kind, apiVersion, ns, name, id, fieldPath, rv string) corev1.ObjectReference {
	return corev1.ObjectReference{Kind: kind, APIVersion: apiVersion, Namespace: ns, Name: name, UID: typesUID(id), FieldPath: fieldPath, ResourceVersion: rv}
}

// ---------------------------------------------------------------------------
// misc

func (o *out) configMap(name, ns, created string, labels map[string]string, data map[string]string) *corev1.ConfigMap {
	cm := &corev1.ConfigMap{TypeMeta: tm("v1", "ConfigMap"), ObjectMeta: o.meta("ConfigMap", name, ns, created, labels, nil), Data: data}
	return cm
}

func (o *out) opaqueSecret(name, ns, created string, labels map[string]string, data map[string]string) *corev1.Secret {
	d := map[string][]byte{}
	for k, v := range data {
		d[k] = []byte(v)
	}
	return &corev1.Secret{TypeMeta: tm("v1", "Secret"), ObjectMeta: o.meta("Secret", name, ns, created, labels, nil), Type: corev1.SecretTypeOpaque, Data: d}
}

// crd builds a minimal but valid apiextensions.k8s.io/v1 CustomResourceDefinition.
func (o *out) crd(plural, group, version, kind, scope, created string, labels map[string]string, annotations map[string]string) u {
	m := o.meta("CustomResourceDefinition", plural+"."+group, "", created, labels, annotations)
	m.Generation = 1
	meta := map[string]any{
		"name":              m.Name,
		"uid":               string(m.UID),
		"resourceVersion":   m.ResourceVersion,
		"generation":        m.Generation,
		"creationTimestamp": rfc(m.CreationTimestamp.Time),
	}
	if len(labels) > 0 {
		meta["labels"] = labels
	}
	if len(annotations) > 0 {
		meta["annotations"] = annotations
	}
	singular := strings.ToLower(kind)
	created2 := rfc(m.CreationTimestamp.Time)
	obj := u{
		"apiVersion": "apiextensions.k8s.io/v1",
		"kind":       "CustomResourceDefinition",
		"metadata":   meta,
		"spec": map[string]any{
			"group":      group,
			"conversion": map[string]any{"strategy": "None"},
			"names": map[string]any{
				"kind":     kind,
				"listKind": kind + "List",
				"plural":   plural,
				"singular": singular,
			},
			"scope": scope,
			"versions": []any{map[string]any{
				"name":    version,
				"served":  true,
				"storage": true,
				"schema": map[string]any{"openAPIV3Schema": map[string]any{
					"type":                                 "object",
					"x-kubernetes-preserve-unknown-fields": true,
				}},
				"subresources": map[string]any{"status": map[string]any{}},
			}},
		},
		"status": map[string]any{
			"acceptedNames": map[string]any{"kind": kind, "listKind": kind + "List", "plural": plural, "singular": singular},
			"conditions": []any{
				map[string]any{"type": "NamesAccepted", "status": "True", "reason": "NoConflicts", "message": "no conflicts found", "lastTransitionTime": created2},
				map[string]any{"type": "Established", "status": "True", "reason": "InitialNamesAccepted", "message": "the initial names have been accepted", "lastTransitionTime": created2},
			},
			"storedVersions": []any{version},
		},
	}
	return obj
}

func typesUID(s string) types.UID { return types.UID(s) }
