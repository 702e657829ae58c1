package messages

import (
	"reflect"
	"testing"
)

func TestParseTooLarge(t *testing.T) {
	tests := []struct {
		name, source, msg string
		want              *TooLarge
	}{
		{
			name:   "gitjob pod log, etcd refuses the Bundle",
			source: "rancher/fleet#2388 (Fleet 0.9.0), rancher/charts#2718; etcd rpctypes ErrRequestTooLarge",
			msg:    `time="2024-04-29T17:55:58Z" level=fatal msg="etcdserver: request is too large"`,
			want:   &TooLarge{Limit: LimitEtcdRequest, LimitBytes: EtcdRequestBytes},
		},
		{
			name:   "fleet-controller reconciler error storing a Bundle's status for many clusters",
			source: "rancher/fleet#3482 (Fleet 0.11.5, ~72 clusters), controller-runtime Reconciler error JSON log",
			msg:    `{"level":"error","ts":"2025-03-27T10:43:27Z","msg":"Reconciler error","controller":"bundle","Bundle":{"name":"xyz-kube-prometheus-stack","namespace":"xyz"},"error":"etcdserver: request is too large"}`,
			want:   &TooLarge{Limit: LimitEtcdRequest, LimitBytes: EtcdRequestBytes},
		},
		{
			name:   "gitjob pod log, the API server refuses the request body",
			source: "rancher/fleet#205, #1650 (Rancher 2.7.5); k8s.io/apiserver handlers/rest.go limitedReadBody",
			msg:    `time="2023-07-14T01:45:17Z" level=fatal msg="Request entity too large: limit is 3145728"`,
			want:   &TooLarge{Limit: LimitAPIRequest, LimitBytes: APIRequestBytes},
		},
		{
			name:   "gitjob pod log, gRPC message to etcd too large",
			source: "rancher/fleet#691 (2021), #2442 (Fleet 0.9.4); grpc-go stream.go SendMsg",
			msg:    `time="2021-12-27T09:35:06Z" level=fatal msg="rpc error: code = ResourceExhausted desc = trying to send message larger than max (2460336 vs. 2097152)"`,
			want:   &TooLarge{Limit: LimitGRPCMessage, SizeBytes: 2460336, LimitBytes: GRPCMessageBytes},
		},
		{
			name:   "Helm upgrade, release Secret over 1 MiB (bytes)",
			source: "helm/helm#9788, bitnami/charts#28990; pkg/apis/core/validation ValidateSecret via Helm's Secrets driver Create",
			msg:    `UPGRADE FAILED: create: failed to create: Secret "sh.helm.release.v1.prometheus.v9" is invalid: data: Too long: must have at most 1048576 bytes`,
			want:   &TooLarge{Limit: LimitObjectData, LimitBytes: ObjectDataBytes, Kind: "Secret", Name: "sh.helm.release.v1.prometheus.v9"},
		},
		{
			name:   "Helm 3.0 on an older API server (characters)",
			source: "helm/helm#7126, #6711; apimachinery field.TooLong wording before bytes",
			msg:    `Error: UPGRADE FAILED: create: failed to create: Secret "sh.helm.release.v1.chart-name.v20" is invalid: data: Too long: must have at most 1048576 characters`,
			want:   &TooLarge{Limit: LimitObjectData, LimitBytes: ObjectDataBytes, Kind: "Secret", Name: "sh.helm.release.v1.chart-name.v20"},
		},
		{
			name:   "newer API server wording, quoted in a Fleet BundleDeployment condition (JSON-escaped)",
			source: "shopware/shopware-operator#153; apimachinery field.TooLong \"may not be more than %d bytes\"",
			msg:    `{\"error\":\"create: failed to create: Secret \\\"sh.helm.release.v1.shopware-operator.v7\\\" is invalid: data: Too long: may not be more than 1048576 bytes\"}`,
			want:   &TooLarge{Limit: LimitObjectData, LimitBytes: ObjectDataBytes, Kind: "Secret", Name: "sh.helm.release.v1.shopware-operator.v7"},
		},
		{
			name:   "Helm's ConfigMap driver",
			source: "VictoriaMetrics/helm-charts#424 (HELM_DRIVER=configmap); ValidateConfigMap field.TooLong(field.NewPath(\"\"), …)",
			msg:    `create: failed to create: ConfigMap "sh.helm.release.v1.vm.v24" is invalid: []: Too long: must have at most 1048576 bytes`,
			want:   &TooLarge{Limit: LimitObjectData, LimitBytes: ObjectDataBytes, Kind: "ConfigMap", Name: "sh.helm.release.v1.vm.v24"},
		},
		{
			name:   "not this family: a label value too long",
			source: "apimachinery validation of label values",
			msg:    `metadata.labels: Invalid value: "a-very-long-value": must be no more than 63 characters`,
		},
		{
			name:   "not this family: an annotation too long",
			source: "apimachinery ValidateAnnotations",
			msg:    `metadata.annotations: Too long: must have at most 262144 bytes`,
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, ok := ParseTooLarge(tt.msg)
			if ok != (tt.want != nil) {
				t.Fatalf("ParseTooLarge (%s) ok=%v, got %+v", tt.source, ok, got)
			}
			if tt.want != nil && !reflect.DeepEqual(got, *tt.want) {
				t.Errorf("ParseTooLarge (%s):\n got %+v\nwant %+v", tt.source, got, *tt.want)
			}
		})
	}
}
