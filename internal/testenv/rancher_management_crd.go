package testenv

import (
	"context"
	"fmt"

	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/rest"
	"sigs.k8s.io/controller-runtime/pkg/envtest"
)

// RancherManagementClusterCRD is a minimal CRD for Rancher's management.cattle.io/v3
// Cluster (cluster-scoped, plural clusters, status subresource), schemaless: the management
// cluster of a test fleet carries these objects so that the clusters a Rancher token may see
// can be discovered. Rancher's own CRD comes from its Go module; only the fields read here
// matter (metadata.name, the cluster ID; spec.displayName).
func RancherManagementClusterCRD() *apiextensionsv1.CustomResourceDefinition {
	preserve := true
	return &apiextensionsv1.CustomResourceDefinition{
		TypeMeta:   metav1.TypeMeta{APIVersion: "apiextensions.k8s.io/v1", Kind: "CustomResourceDefinition"},
		ObjectMeta: metav1.ObjectMeta{Name: "clusters.management.cattle.io"},
		Spec: apiextensionsv1.CustomResourceDefinitionSpec{
			Group: "management.cattle.io",
			Names: apiextensionsv1.CustomResourceDefinitionNames{Plural: "clusters", Singular: "cluster", Kind: "Cluster", ListKind: "ClusterList"},
			Scope: apiextensionsv1.ClusterScoped,
			Versions: []apiextensionsv1.CustomResourceDefinitionVersion{{
				Name: "v3", Served: true, Storage: true,
				Schema: &apiextensionsv1.CustomResourceValidation{OpenAPIV3Schema: &apiextensionsv1.JSONSchemaProps{
					Type: "object", XPreserveUnknownFields: &preserve,
				}},
				Subresources: &apiextensionsv1.CustomResourceSubresources{Status: &apiextensionsv1.CustomResourceSubresourceStatus{}},
			}},
		},
	}
}

// InstallCRDs creates CRDs on a running server and waits until they are served.
func InstallCRDs(ctx context.Context, cfg *rest.Config, crds ...*apiextensionsv1.CustomResourceDefinition) error {
	if _, err := envtest.InstallCRDs(cfg, envtest.CRDInstallOptions{CRDs: crds}); err != nil {
		return fmt.Errorf("installing CRDs: %w", err)
	}
	return ctx.Err()
}
