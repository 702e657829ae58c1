package source

import (
	"context"
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/rest"
)

// PullSecrets gets exactly the named secrets, returns their docker config payloads and turns
// missing, forbidden and foreign secrets into errors naming them.
func TestPullSecrets(t *testing.T) {
	payload := []byte(`{"auths":{"registry.example.com":{"auth":"cm9ib3Q6czNjcmV0"}}}`)
	var gets []string
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		gets = append(gets, r.Method+" "+r.URL.Path)
		w.Header().Set("Content-Type", "application/json")
		switch r.URL.Path {
		case "/api/v1/namespaces/system-upgrade/secrets/registry-example-com":
			_ = json.NewEncoder(w).Encode(&corev1.Secret{TypeMeta: metav1.TypeMeta{APIVersion: "v1", Kind: "Secret"},
				ObjectMeta: metav1.ObjectMeta{Name: "registry-example-com", Namespace: "system-upgrade"},
				Type:       corev1.SecretTypeDockerConfigJson, Data: map[string][]byte{corev1.DockerConfigJsonKey: payload}})
		case "/api/v1/namespaces/system-upgrade/secrets/opaque":
			_ = json.NewEncoder(w).Encode(&corev1.Secret{TypeMeta: metav1.TypeMeta{APIVersion: "v1", Kind: "Secret"},
				ObjectMeta: metav1.ObjectMeta{Name: "opaque", Namespace: "system-upgrade"}, Type: corev1.SecretTypeOpaque, Data: map[string][]byte{"token": []byte("x")}})
		case "/api/v1/namespaces/cattle-fleet-system/secrets/forbidden":
			w.WriteHeader(http.StatusForbidden)
			_, _ = w.Write([]byte(`{"kind":"Status","apiVersion":"v1","status":"Failure","message":"secrets \"forbidden\" is forbidden: User \"system:serviceaccount:cattle-system:unstick\" cannot get resource \"secrets\" in API group \"\" in the namespace \"cattle-fleet-system\"","reason":"Forbidden","code":403}`))
		default:
			w.WriteHeader(http.StatusNotFound)
			_, _ = w.Write([]byte(`{"kind":"Status","apiVersion":"v1","status":"Failure","message":"secrets not found","reason":"NotFound","code":404}`))
		}
	}))
	defer srv.Close()
	l := &Live{Targets: []Target{{Name: "prod", Server: srv.URL, Config: &rest.Config{Host: srv.URL}}}}
	payloads, errs := l.PullSecrets(context.Background(), []SecretRef{
		{"prod", "system-upgrade", "registry-example-com"},
		{"prod", "system-upgrade", "registry-example-com"}, // asked once
		{"prod", "system-upgrade", "opaque"},
		{"prod", "system-upgrade", "gone"},
		{"prod", "cattle-fleet-system", "forbidden"},
		{"other", "x", "y"}, // not a target: ignored
	})
	if len(payloads) != 1 || string(payloads[0]) != string(payload) {
		t.Errorf("payloads %q", payloads)
	}
	if len(gets) != 4 {
		t.Errorf("requests %v, want each secret once", gets)
	}
	msgs := ""
	for _, e := range errs {
		msgs += e.Message + "\n"
	}
	for _, want := range []string{"system-upgrade/gone does not exist", "forbidden: cannot get image pull secret cattle-fleet-system/forbidden", "system-upgrade/opaque has type Opaque"} {
		if !strings.Contains(msgs, want) {
			t.Errorf("errors lack %q:\n%s", want, msgs)
		}
	}
}
