{
  "apiVersion": "apiextensions.k8s.io/v1",
  "kind": "CustomResourceDefinition",
  "metadata": {
    "creationTimestamp": "2026-04-08T12:57:48Z",
    "generation": 1,
    "name": "helmchartconfigs.helm.cattle.io",
    "resourceVersion": "57410380",
    "uid": "8ab1a777-239f-46c4-be14-c40656b16117"
  },
  "spec": {
    "conversion": {
      "strategy": "None"
    },
    "group": "helm.cattle.io",
    "names": {
      "kind": "HelmChartConfig",
      "listKind": "HelmChartConfigList",
      "plural": "helmchartconfigs",
      "singular": "helmchartconfig"
    },
    "scope": "Namespaced",
    "versions": [
      {
        "name": "v1",
        "schema": {
          "openAPIV3Schema": {
            "type": "object",
            "x-kubernetes-preserve-unknown-fields": true
          }
        },
        "served": true,
        "storage": true,
        "subresources": {
          "status": {}
        }
      }
    ]
  },
  "status": {
    "acceptedNames": {
      "kind": "HelmChartConfig",
      "listKind": "HelmChartConfigList",
      "plural": "helmchartconfigs",
      "singular": "helmchartconfig"
    },
    "conditions": [
      {
        "lastTransitionTime": "2026-04-08T12:57:48Z",
        "message": "no conflicts found",
        "reason": "NoConflicts",
        "status": "True",
        "type": "NamesAccepted"
      },
      {
        "lastTransitionTime": "2026-04-08T12:57:48Z",
        "message": "the initial names have been accepted",
        "reason": "InitialNamesAccepted",
        "status": "True",
        "type": "Established"
      }
    ],
    "storedVersions": [
      "v1"
    ]
  }
}
