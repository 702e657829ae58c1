package e2e

import (
	"encoding/json"
	"io"
	"net/http"
	"strings"
	"testing"
	"time"

	authenticationv1 "k8s.io/api/authentication/v1"
	authorizationv1 "k8s.io/api/authorization/v1"
	corev1 "k8s.io/api/core/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"
)

// serveAuthnOn runs `unstick serve --authn=on` as the ServiceAccount of kubeconfig (bound to
// the scan role) once it is also bound to system:auth-delegator, as the chart binds it: the
// findings answer an on-call engineer's token bound to the reader role, refuse another
// ServiceAccount's (403) and a request without one (401), and a request naming another
// host than the loopback serve listens on (421); /healthz stays open.
func serveAuthnOn(t *testing.T, admin kubernetes.Interface, saCfg *rest.Config, kubeconfig string) {
	createBinding(t, admin, "unstick-auth-delegator", "system:auth-delegator", "cattle-system", "unstick")
	if _, err := admin.RbacV1().ClusterRoles().Create(t.Context(), &rbacv1.ClusterRole{ObjectMeta: metav1.ObjectMeta{Name: "unstick-reader"},
		Rules: []rbacv1.PolicyRule{{NonResourceURLs: []string{"/unstick/", "/unstick/api/v1/findings", "/unstick/metrics"}, Verbs: []string{"get"}}}}, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	createBinding(t, admin, "oncall-unstick-reader", "unstick-reader", "cattle-system", "oncall")
	oncall, tenant := saToken(t, admin, "cattle-system", "oncall"), saToken(t, admin, "cattle-system", "tenant")
	waitAllowed(t, saCfg, authorizationv1.ResourceAttributes{Verb: "create", Group: "authentication.k8s.io", Resource: "tokenreviews"})
	waitNonResource(t, admin, "system:serviceaccount:cattle-system:oncall", "/unstick/api/v1/findings")

	addr, stderr := runServe(t, "--kubeconfig", kubeconfig, "--authn", "on")
	if !strings.Contains(stderr.String(), "bearer token required") {
		t.Errorf("serve's start line does not say a token is required:\n%s", stderr.String())
	}
	base := "http://" + addr
	for _, c := range []struct {
		path, token, host string
		want              int
	}{
		{"/healthz", "", "", http.StatusOK},
		{"/api/v1/findings", "", "", http.StatusUnauthorized},
		{"/api/v1/findings", tenant, "", http.StatusForbidden},
		{"/metrics", tenant, "", http.StatusForbidden},
		{"/api/v1/findings", oncall, "", http.StatusOK},
		{"/metrics", oncall, "", http.StatusOK},
		{"/", oncall, "", http.StatusOK},
		{"/api/v1/findings", oncall, "unstick.attacker.example.com:" + addr[strings.LastIndex(addr, ":")+1:], http.StatusMisdirectedRequest},
	} {
		code, body := getAs(t, base+c.path, c.token, c.host)
		if code != c.want {
			t.Errorf("%s (token %v, host %q): %d, want %d\n%.200s", c.path, c.token != "", c.host, code, c.want, body)
		}
		if code == http.StatusOK && c.path == "/api/v1/findings" {
			var r scanResult
			if err := json.Unmarshal(body, &r); err != nil || len(r.Findings) == 0 {
				t.Errorf("the on-call engineer's findings: %v, %d findings", err, len(r.Findings))
			}
		}
	}
}

func createBinding(t *testing.T, admin kubernetes.Interface, name, role, ns, sa string) {
	t.Helper()
	if _, err := admin.RbacV1().ClusterRoleBindings().Create(t.Context(), &rbacv1.ClusterRoleBinding{ObjectMeta: metav1.ObjectMeta{Name: name},
		RoleRef:  rbacv1.RoleRef{APIGroup: rbacv1.GroupName, Kind: "ClusterRole", Name: role},
		Subjects: []rbacv1.Subject{{Kind: rbacv1.ServiceAccountKind, Name: sa, Namespace: ns}}}, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
}

// saToken creates a ServiceAccount if needed and returns a token for it (TokenRequest).
func saToken(t *testing.T, admin kubernetes.Interface, ns, name string) string {
	t.Helper()
	if _, err := admin.CoreV1().ServiceAccounts(ns).Create(t.Context(), &corev1.ServiceAccount{ObjectMeta: metav1.ObjectMeta{Name: name}}, metav1.CreateOptions{}); err != nil && !apierrors.IsAlreadyExists(err) {
		t.Fatal(err)
	}
	tr, err := admin.CoreV1().ServiceAccounts(ns).CreateToken(t.Context(), name, &authenticationv1.TokenRequest{}, metav1.CreateOptions{})
	if err != nil {
		t.Fatal(err)
	}
	return tr.Status.Token
}

// waitNonResource waits until the RBAC authorizer has seen user's new binding: serve would
// otherwise cache a refusal for ten seconds.
func waitNonResource(t *testing.T, admin kubernetes.Interface, user, path string) {
	t.Helper()
	for range 150 {
		r, err := admin.AuthorizationV1().SubjectAccessReviews().Create(t.Context(), &authorizationv1.SubjectAccessReview{
			Spec: authorizationv1.SubjectAccessReviewSpec{User: user, Groups: []string{"system:serviceaccounts", "system:authenticated"},
				NonResourceAttributes: &authorizationv1.NonResourceAttributes{Path: path, Verb: "get"}}}, metav1.CreateOptions{})
		if err == nil && r.Status.Allowed {
			return
		}
		time.Sleep(100 * time.Millisecond)
	}
	t.Fatalf("%s may still not get %s", user, path)
}

func getAs(t *testing.T, url, token, host string) (int, []byte) {
	t.Helper()
	req, err := http.NewRequestWithContext(t.Context(), http.MethodGet, url, nil)
	if err != nil {
		t.Fatal(err)
	}
	if token != "" {
		req.Header.Set("Authorization", "Bearer "+token)
	}
	if host != "" {
		req.Host = host
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	return resp.StatusCode, b
}
