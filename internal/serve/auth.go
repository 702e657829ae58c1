package serve

import (
	"context"
	"crypto/sha256"
	"fmt"
	"log/slog"
	"net/http"
	"strings"
	"time"

	authenticationv1 "k8s.io/api/authentication/v1"
	authorizationv1 "k8s.io/api/authorization/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"
)

// The endpoints a token must be allowed to read when authentication is on. /healthz and
// /readyz stay open for the kubelet's probes.
const (
	PathDashboard = "/"
	PathFindings  = "/api/v1/findings"
	PathMetrics   = "/metrics"
)

// AuthzPrefix is put before an endpoint's path to make the non-resource URL a
// SubjectAccessReview asks about: /unstick/metrics, /unstick/api/v1/findings, /unstick/ for
// the dashboard. The paths themselves would collide with the API server's: the built-in
// ClusterRole system:discovery lets every authenticated user get /api/*, so checking
// /api/v1/findings as it is would admit any token the cluster accepts.
const AuthzPrefix = "/unstick"

// AuthzURL is the non-resource URL a client must be allowed to get to read path.
func AuthzURL(path string) string { return AuthzPrefix + path }

// Auth puts Kubernetes authentication and authorisation in front of serve's endpoints, as
// kube-rbac-proxy does: the bearer token of each request is checked with a TokenReview, and
// its user with a SubjectAccessReview for verb get on the non-resource URL AuthzURL(path). Decisions are cached briefly, keyed by a hash of the token and the path, so a
// Prometheus scraping every 30s costs two API calls a minute at most.
type Auth struct {
	kube  kubernetes.Interface
	log   *slog.Logger
	cache *decisionCache
}

// Decisions are remembered this long: an allowed scrape for a minute, a refusal for ten
// seconds, so a role granted is seen quickly and a revoked one within a minute.
const (
	allowTTL     = time.Minute
	denyTTL      = 10 * time.Second
	maxDecisions = 4096
	// maxTokenBytes bounds what is sent for review: service-account tokens are about 1 KiB,
	// OIDC tokens a few.
	maxTokenBytes = 16 << 10
	reviewTimeout = 10 * time.Second
)

// NewAuth reviews tokens with kube, whose credentials need `create` on tokenreviews and
// subjectaccessreviews (the built-in ClusterRole system:auth-delegator).
func NewAuth(kube kubernetes.Interface, log *slog.Logger) *Auth {
	if log == nil {
		log = slog.New(slog.DiscardHandler)
	}
	return &Auth{kube: kube, log: log, cache: newDecisionCache(maxDecisions, time.Now)}
}

// Protect answers a request to path only when its token's user may get AuthzURL(path).
func (a *Auth) Protect(path string, h http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		token, ok := bearerToken(r)
		if !ok {
			unauthorized(w)
			return
		}
		d, err := a.decide(r.Context(), token, path)
		if err != nil {
			a.log.Error("cannot review a request's token", "path", path, "err", err)
			http.Error(w, "authentication is unavailable: the API server did not answer the review", http.StatusServiceUnavailable)
			return
		}
		switch d.status {
		case http.StatusOK:
			h.ServeHTTP(w, r)
		case http.StatusUnauthorized:
			unauthorized(w)
		default:
			http.Error(w, fmt.Sprintf("forbidden: %s may not get %s (a ClusterRole with nonResourceURLs [%q] and verb get is needed)", d.user, path, AuthzURL(path)), http.StatusForbidden)
		}
	})
}

func unauthorized(w http.ResponseWriter) {
	w.Header().Set("WWW-Authenticate", `Bearer realm="unstick"`)
	http.Error(w, "unauthorized: send a Kubernetes bearer token (Authorization: Bearer …)", http.StatusUnauthorized)
}

// bearerToken is the token of an `Authorization: Bearer` header.
func bearerToken(r *http.Request) (string, bool) {
	h := r.Header.Get("Authorization")
	scheme, token, ok := strings.Cut(h, " ")
	if !ok || !strings.EqualFold(scheme, "bearer") {
		return "", false
	}
	token = strings.TrimSpace(token)
	if token == "" || len(token) > maxTokenBytes {
		return "", false
	}
	return token, true
}

// decision is the answer for one token and path: 200, 401 or 403, and who asked.
type decision struct {
	status int
	user   string
}

func (a *Auth) decide(ctx context.Context, token, path string) (decision, error) {
	key := cacheKey(token, path)
	if d, ok := a.cache.get(key); ok {
		return d, nil
	}
	ctx, cancel := context.WithTimeout(ctx, reviewTimeout)
	defer cancel()
	d, err := a.review(ctx, token, path)
	if err != nil {
		return decision{}, err
	}
	ttl := denyTTL
	if d.status == http.StatusOK {
		ttl = allowTTL
	}
	a.cache.put(key, d, ttl)
	return d, nil
}

// cacheKey never holds the token itself.
func cacheKey(token, path string) string {
	sum := sha256.Sum256([]byte(token))
	return string(sum[:]) + path
}

func (a *Auth) review(ctx context.Context, token, path string) (decision, error) {
	tr, err := a.kube.AuthenticationV1().TokenReviews().Create(ctx, &authenticationv1.TokenReview{
		Spec: authenticationv1.TokenReviewSpec{Token: token}}, metav1.CreateOptions{})
	if err != nil {
		return decision{}, fmt.Errorf("TokenReview: %w", err)
	}
	if !tr.Status.Authenticated {
		return decision{status: http.StatusUnauthorized}, nil
	}
	u := tr.Status.User
	extra := map[string]authorizationv1.ExtraValue{}
	for k, v := range u.Extra {
		extra[k] = authorizationv1.ExtraValue(v)
	}
	sar, err := a.kube.AuthorizationV1().SubjectAccessReviews().Create(ctx, &authorizationv1.SubjectAccessReview{
		Spec: authorizationv1.SubjectAccessReviewSpec{
			User: u.Username, UID: u.UID, Groups: u.Groups, Extra: extra,
			NonResourceAttributes: &authorizationv1.NonResourceAttributes{Path: AuthzURL(path), Verb: "get"},
		}}, metav1.CreateOptions{})
	if err != nil {
		return decision{}, fmt.Errorf("SubjectAccessReview: %w", err)
	}
	if !sar.Status.Allowed || sar.Status.Denied {
		return decision{status: http.StatusForbidden, user: u.Username}, nil
	}
	return decision{status: http.StatusOK, user: u.Username}, nil
}
