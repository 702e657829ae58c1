{
  "apiVersion": "apiextensions.k8s.io/v1",
  "kind": "CustomResourceDefinition",
  "metadata": {
    "creationTimestamp": "2026-04-08T12:57:48Z",
    "generation": 1,
    "name": "addons.k3s.cattle.io",
    "resourceVersion": "57410348",
    "uid": "9186a32b-81a1-409e-99cc-f79165bc4aa3"
  },
  "spec": {
    "conversion": {
      "strategy": "None"
    },
    "group": "k3s.cattle.io",
    "names": {
      "kind": "Addon",
      "listKind": "AddonList",
      "plural": "addons",
      "singular": "addon"
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
      "kind": "Addon",
      "listKind": "AddonList",
      "plural": "addons",
      "singular": "addon"
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
