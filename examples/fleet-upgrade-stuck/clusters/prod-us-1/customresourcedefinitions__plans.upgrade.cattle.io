{
  "apiVersion": "apiextensions.k8s.io/v1",
  "kind": "CustomResourceDefinition",
  "metadata": {
    "creationTimestamp": "2026-04-08T13:03:27Z",
    "generation": 1,
    "name": "plans.upgrade.cattle.io",
    "resourceVersion": "57410404",
    "uid": "33897553-247f-4f9f-9ec9-f575d3bab176"
  },
  "spec": {
    "conversion": {
      "strategy": "None"
    },
    "group": "upgrade.cattle.io",
    "names": {
      "kind": "Plan",
      "listKind": "PlanList",
      "plural": "plans",
      "singular": "plan"
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
      "kind": "Plan",
      "listKind": "PlanList",
      "plural": "plans",
      "singular": "plan"
    },
    "conditions": [
      {
        "lastTransitionTime": "2026-04-08T13:03:27Z",
        "message": "no conflicts found",
        "reason": "NoConflicts",
        "status": "True",
        "type": "NamesAccepted"
      },
      {
        "lastTransitionTime": "2026-04-08T13:03:27Z",
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
