{
  "apiVersion": "apiextensions.k8s.io/v1",
  "kind": "CustomResourceDefinition",
  "metadata": {
    "creationTimestamp": "2026-04-08T12:58:40Z",
    "generation": 1,
    "name": "volumesnapshots.snapshot.storage.k8s.io",
    "resourceVersion": "57410446",
    "uid": "6521e7ec-6ddb-400c-a0a2-d80f9dd03044"
  },
  "spec": {
    "conversion": {
      "strategy": "None"
    },
    "group": "snapshot.storage.k8s.io",
    "names": {
      "kind": "VolumeSnapshot",
      "listKind": "VolumeSnapshotList",
      "plural": "volumesnapshots",
      "singular": "volumesnapshot"
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
      "kind": "VolumeSnapshot",
      "listKind": "VolumeSnapshotList",
      "plural": "volumesnapshots",
      "singular": "volumesnapshot"
    },
    "conditions": [
      {
        "lastTransitionTime": "2026-04-08T12:58:40Z",
        "message": "no conflicts found",
        "reason": "NoConflicts",
        "status": "True",
        "type": "NamesAccepted"
      },
      {
        "lastTransitionTime": "2026-04-08T12:58:40Z",
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
