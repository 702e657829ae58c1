{
  "apiVersion": "apiextensions.k8s.io/v1",
  "kind": "CustomResourceDefinition",
  "metadata": {
    "creationTimestamp": "2026-04-08T12:57:48Z",
    "generation": 1,
    "name": "helmcharts.helm.cattle.io",
    "resourceVersion": "57410388",
    "uid": "32ca7d93-9183-4c99-8139-8ee18512dd12"
  },
  "spec": {
    "conversion": {
      "strategy": "None"
    },
    "group": "helm.cattle.io",
    "names": {
      "kind": "HelmChart",
      "listKind": "HelmChartList",
      "plural": "helmcharts",
      "singular": "helmchart"
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
      "kind": "HelmChart",
      "listKind": "HelmChartList",
      "plural": "helmcharts",
      "singular": "helmchart"
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
