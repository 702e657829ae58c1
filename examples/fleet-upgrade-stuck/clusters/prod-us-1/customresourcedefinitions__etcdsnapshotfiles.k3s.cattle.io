{
  "apiVersion": "apiextensions.k8s.io/v1",
  "kind": "CustomResourceDefinition",
  "metadata": {
    "creationTimestamp": "2026-04-08T12:57:48Z",
    "generation": 1,
    "name": "etcdsnapshotfiles.k3s.cattle.io",
    "resourceVersion": "57410363",
    "uid": "561609e5-3a4b-40f6-9a35-4484e224dc27"
  },
  "spec": {
    "conversion": {
      "strategy": "None"
    },
    "group": "k3s.cattle.io",
    "names": {
      "kind": "ETCDSnapshotFile",
      "listKind": "ETCDSnapshotFileList",
      "plural": "etcdsnapshotfiles",
      "singular": "etcdsnapshotfile"
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
      "kind": "ETCDSnapshotFile",
      "listKind": "ETCDSnapshotFileList",
      "plural": "etcdsnapshotfiles",
      "singular": "etcdsnapshotfile"
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
