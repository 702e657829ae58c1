{
  "apiVersion": "apiextensions.k8s.io/v1",
  "kind": "CustomResourceDefinition",
  "metadata": {
    "creationTimestamp": "2026-04-08T12:58:40Z",
    "generation": 1,
    "name": "volumesnapshotclasses.snapshot.storage.k8s.io",
    "resourceVersion": "57410423",
    "uid": "ff79e923-7f19-40cb-bfcf-dcc7d8053fb2"
  },
  "spec": {
    "conversion": {
      "strategy": "None"
    },
    "group": "snapshot.storage.k8s.io",
    "names": {
      "kind": "VolumeSnapshotClass",
      "listKind": "VolumeSnapshotClassList",
      "plural": "volumesnapshotclasses",
      "singular": "volumesnapshotclass"
    },
    "scope": "Cluster",
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
      "kind": "VolumeSnapshotClass",
      "listKind": "VolumeSnapshotClassList",
      "plural": "volumesnapshotclasses",
      "singular": "volumesnapshotclass"
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
