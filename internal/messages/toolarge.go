package messages

import (
	"strconv"

	"github.com/unstick-dev/unstick/internal/lazyre"
)

// The size limits an object or a request meets on its way to etcd, as the messages name them.
const (
	// LimitEtcdRequest is etcd's --max-request-bytes (1.5 MiB by default): no value larger than
	// that is stored.
	LimitEtcdRequest = "etcd-request"
	// LimitAPIRequest is the kube-apiserver's bound on a request body (3 MiB).
	LimitAPIRequest = "api-request"
	// LimitGRPCMessage is a gRPC message bound (2 MiB for the kube-apiserver's etcd client).
	LimitGRPCMessage = "grpc-message"
	// LimitObjectData is the API's validation of a Secret's or ConfigMap's data (1 MiB).
	LimitObjectData = "object-data"
)

// Default limits in bytes, for when a message names the limit without its size.
const (
	EtcdRequestBytes = 1572864 // etcd embed.DefaultMaxRequestBytes, 1.5 MiB
	APIRequestBytes  = 3145728 // k8s.io/apiserver handlers: 3 MiB
	GRPCMessageBytes = 2097152 // 2 MiB
	ObjectDataBytes  = 1048576 // k8s.io/kubernetes pkg/apis/core MaxSecretSize, 1 MiB
)

// TooLarge is a write refused because an object or a request was too large.
type TooLarge struct {
	Limit      string // one of the Limit* constants
	LimitBytes int    // the limit, as the message says it (else the default for Limit)
	SizeBytes  int    // the refused size, when the message says it (gRPC does)
	// Kind and Name are the refused object, when the message names it (Secret
	// "sh.helm.release.v1.web.v8").
	Kind, Name string
}

var (
	// etcd server/etcdserver/api/v3rpc/rpctypes/error.go ErrRequestTooLarge.
	etcdTooLarge = lazyre.New(`etcdserver: request is too large`)
	// k8s.io/apiserver pkg/endpoints/handlers/rest.go limitedReadBody:
	// NewRequestEntityTooLargeError(fmt.Sprintf("limit is %d", limit)).
	apiTooLarge = lazyre.New(`(?i)request entity too large: limit is (\d+)`)
	// grpc-go stream.go: "trying to send message larger than max (%d vs. %d)" (code
	// ResourceExhausted); rpc_util.go: "grpc: received message larger than max (%d vs. %d)".
	grpcTooLarge = lazyre.New(`(?:trying to send|received) message larger than max \((\d+) vs\. (\d+)\)`)
	// k8s.io/kubernetes pkg/apis/core/validation ValidateSecret / ValidateConfigMap:
	// field.TooLong(…, core.MaxSecretSize), worded by apimachinery's field errors over the
	// releases: "must have at most %d characters", "must have at most %d bytes", "may not be
	// more than %d bytes".
	dataTooLong = lazyre.New(`(?:(Secret|ConfigMap) "([^"]+)" is invalid: )?(?:data|\[\]|binaryData): Too long: (?:must have at most|may not be more than) (\d+) (?:bytes|characters)`)
)

// ParseTooLarge reads a refusal for size: etcd's, the API server's, gRPC's, or the validation
// of a Secret's or ConfigMap's data.
func ParseTooLarge(msg string) (TooLarge, bool) {
	msg = unquote(msg)
	if m := dataTooLong().FindStringSubmatch(msg); m != nil {
		return TooLarge{Limit: LimitObjectData, LimitBytes: atoi(m[3], ObjectDataBytes), Kind: m[1], Name: m[2]}, true
	}
	if m := grpcTooLarge().FindStringSubmatch(msg); m != nil {
		return TooLarge{Limit: LimitGRPCMessage, SizeBytes: atoi(m[1], 0), LimitBytes: atoi(m[2], GRPCMessageBytes)}, true
	}
	if m := apiTooLarge().FindStringSubmatch(msg); m != nil {
		return TooLarge{Limit: LimitAPIRequest, LimitBytes: atoi(m[1], APIRequestBytes)}, true
	}
	if etcdTooLarge().MatchString(msg) {
		return TooLarge{Limit: LimitEtcdRequest, LimitBytes: EtcdRequestBytes}, true
	}
	return TooLarge{}, false
}

func atoi(s string, def int) int {
	if n, err := strconv.Atoi(s); err == nil {
		return n
	}
	return def
}
