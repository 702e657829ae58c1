{
  "apiVersion": "apiextensions.k8s.io/v1",
  "kind": "CustomResourceDefinition",
  "metadata": {
    "creationTimestamp": "2026-04-08T12:58:40Z",
    "generation": 1,
    "name": "volumesnapshots.snapshot.storage.k8s.io",
    "resourceVersion": "57410446",
    "uid": "f6544936-7ef0-4e33-9a28-f70473e3f960"
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
