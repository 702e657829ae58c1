package execute

import (
	"context"
	"fmt"
	"maps"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/unstick-dev/unstick/internal/helmrelease"
)

// Release records are written without loss. Helm v3's storage driver encodes Helm v3's release
// type and builds a new Secret for every write: a record field that type does not know (Helm
// 4's apply_method, the chart's modtimes) would be dropped, and so would the Secret's
// annotations and its labels the driver filters out. So the guarded SecretInterface keeps each
// release Secret the driver reads, and every write it passes on is the Secret as read with only
// what the driver changed: the record's changed fields laid over the stored record
// (helmrelease.Carry), the driver's labels over the stored labels. A rollback's new revision is
// laid over the revision it rolls back to (derive).

// Get reads a Secret and keeps it as the base of its next write.
func (g *guardedSecrets) Get(ctx context.Context, name string, opts metav1.GetOptions) (*corev1.Secret, error) {
	s, err := g.SecretInterface.Get(ctx, name, opts)
	if err == nil {
		g.remember(s)
	}
	return s, err
}

// List reads Secrets and keeps each as the base of its next write.
func (g *guardedSecrets) List(ctx context.Context, opts metav1.ListOptions) (*corev1.SecretList, error) {
	l, err := g.SecretInterface.List(ctx, opts)
	if err == nil {
		for i := range l.Items {
			g.remember(&l.Items[i])
		}
	}
	return l, err
}

// remember keeps a copy: Helm's driver hands the labels map of what it lists to the releases
// it decodes.
func (g *guardedSecrets) remember(s *corev1.Secret) {
	if g.read == nil {
		g.read = map[string]*corev1.Secret{}
	}
	g.read[s.Name] = s.DeepCopy()
}

// derive names the release Secret whose record the new record of Secret name is made from.
func (g *guardedSecrets) derive(name, from string) {
	if g.derived == nil {
		g.derived = map[string]string{}
	}
	g.derived[name] = from
}

// stored is Secret name as last read, read again unless it was read at resourceVersion rv
// ("" takes any).
func (g *guardedSecrets) stored(ctx context.Context, name, rv string) (*corev1.Secret, error) {
	if s, ok := g.read[name]; ok && (rv == "" || s.ResourceVersion == rv) {
		return s, nil
	}
	s, err := g.Get(ctx, name, metav1.GetOptions{})
	if err != nil {
		return nil, fmt.Errorf("reading Secret %s/%s to write its release record without loss: %w", g.namespace, name, err)
	}
	return s, nil
}

// created is the Secret Helm's driver made for a new revision, its record laid over the
// record it derives from (a new record derived from none is written as the driver made it).
func (g *guardedSecrets) created(ctx context.Context, s *corev1.Secret) (*corev1.Secret, error) {
	from, ok := g.derived[s.Name]
	if !ok {
		return s, nil
	}
	src, err := g.stored(ctx, from, "")
	if err != nil {
		return nil, err
	}
	record, err := carry(src, s)
	if err != nil {
		return nil, err
	}
	out := s.DeepCopy()
	out.Data["release"] = record
	return out, nil
}

// updated is the Secret as stored at resourceVersion rv with the driver's change: its record
// laid over the stored record, its labels over the stored labels; annotations, other data
// and owners stay as they are.
func (g *guardedSecrets) updated(ctx context.Context, s *corev1.Secret, rv string) (*corev1.Secret, error) {
	orig, err := g.stored(ctx, s.Name, rv)
	if err != nil {
		return nil, err
	}
	record, err := carry(orig, s)
	if err != nil {
		return nil, err
	}
	out := orig.DeepCopy()
	out.ManagedFields = nil // the server keeps them; the write only adds unstick's
	if out.Labels == nil {
		out.Labels = map[string]string{}
	}
	maps.Copy(out.Labels, s.Labels)
	if out.Data == nil {
		out.Data = map[string][]byte{}
	}
	out.Data["release"] = record
	return out, nil
}

// carry lays the record of the Secret the driver made over the record stored in orig.
func carry(orig, s *corev1.Secret) ([]byte, error) {
	record, err := helmrelease.Carry(orig.Data["release"], s.Data["release"])
	if err != nil {
		return nil, fmt.Errorf("writing the release record of Secret %s over %s without loss: %w", s.Name, orig.Name, err)
	}
	return record, nil
}
