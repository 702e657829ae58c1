{
  "apiVersion": "apiextensions.k8s.io/v1",
  "kind": "CustomResourceDefinition",
  "metadata": {
    "creationTimestamp": "2026-04-08T12:58:40Z",
    "generation": 1,
    "name": "volumesnapshotcontents.snapshot.storage.k8s.io",
    "resourceVersion": "57410435",
    "uid": "1edb8d87-e15d-4786-83d0-565c9810c139"
  },
  "spec": {
    "conversion": {
      "strategy": "None"
    },
    "group": "snapshot.storage.k8s.io",
    "names": {
      "kind": "VolumeSnapshotContent",
      "listKind": "VolumeSnapshotContentList",
      "plural": "volumesnapshotcontents",
      "singular": "volumesnapshotcontent"
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
      "kind": "VolumeSnapshotContent",
      "listKind": "VolumeSnapshotContentList",
      "plural": "volumesnapshotcontents",
      "singular": "volumesnapshotcontent"
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
