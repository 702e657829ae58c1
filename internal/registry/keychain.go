package registry

import (
	"encoding/base64"
	"encoding/json"
	"fmt"
	"net/url"
	"strings"

	"github.com/google/go-containerregistry/pkg/authn"
)

// PullSecretKeychain resolves credentials from Kubernetes image pull secrets: the payloads of
// kubernetes.io/dockerconfigjson Secrets ({"auths": {host: {auth|username,password}}}) or
// legacy kubernetes.io/dockercfg ones ({host: {...}}), the credentials a kubelet would
// present for a workload that references them. Later secrets do not override earlier ones.
type PullSecretKeychain struct {
	auths map[string]authn.AuthConfig // normalised host → credentials
}

// NewPullSecretKeychain parses secret payloads; a payload that is neither format is an error
// naming its position, and the others still count.
func NewPullSecretKeychain(payloads ...[]byte) (*PullSecretKeychain, error) {
	k := &PullSecretKeychain{auths: map[string]authn.AuthConfig{}}
	var errs []string
	for i, p := range payloads {
		if err := k.add(p); err != nil {
			errs = append(errs, fmt.Sprintf("pull secret %d: %v", i+1, err))
		}
	}
	if len(errs) > 0 {
		return k, fmt.Errorf("%s", strings.Join(errs, "; "))
	}
	return k, nil
}

type dockerEntry struct {
	Auth          string `json:"auth"`
	Username      string `json:"username"`
	Password      string `json:"password"`
	IdentityToken string `json:"identitytoken"`
	RegistryToken string `json:"registrytoken"`
}

func (k *PullSecretKeychain) add(payload []byte) error {
	var cfg struct {
		Auths map[string]dockerEntry `json:"auths"`
	}
	if err := json.Unmarshal(payload, &cfg); err != nil {
		return fmt.Errorf("not a docker config: %w", err)
	}
	entries := cfg.Auths
	if entries == nil {
		// .dockercfg: the map itself.
		if err := json.Unmarshal(payload, &entries); err != nil {
			return fmt.Errorf("not a docker config: %w", err)
		}
	}
	for host, e := range entries {
		ac := authn.AuthConfig{Username: e.Username, Password: e.Password, IdentityToken: e.IdentityToken, RegistryToken: e.RegistryToken}
		if e.Auth != "" {
			raw, err := base64.StdEncoding.DecodeString(e.Auth)
			if err != nil {
				return fmt.Errorf("%s: auth is not base64", host)
			}
			user, pass, ok := strings.Cut(string(raw), ":")
			if !ok {
				return fmt.Errorf("%s: auth is not user:password", host)
			}
			ac.Username, ac.Password = user, pass
		}
		h := normaliseHost(host)
		if _, dup := k.auths[h]; !dup {
			k.auths[h] = ac
		}
	}
	return nil
}

// Resolve implements authn.Keychain.
func (k *PullSecretKeychain) Resolve(r authn.Resource) (authn.Authenticator, error) {
	if k == nil {
		return authn.Anonymous, nil
	}
	if ac, ok := k.auths[normaliseHost(r.RegistryStr())]; ok {
		return authn.FromConfig(ac), nil
	}
	return authn.Anonymous, nil
}

// Hosts lists the registries the keychain has credentials for.
func (k *PullSecretKeychain) Hosts() []string {
	var out []string
	for h := range k.auths {
		out = append(out, h)
	}
	return out
}

// normaliseHost maps the spellings docker config keys use to the registry host:
// "https://index.docker.io/v1/" and "index.docker.io" are Docker Hub, "docker.io".
func normaliseHost(h string) string {
	h = strings.TrimSpace(strings.ToLower(h))
	if strings.Contains(h, "://") {
		if u, err := url.Parse(h); err == nil {
			h = u.Host
		}
	}
	h, _, _ = strings.Cut(h, "/")
	switch h {
	case "index.docker.io", "registry-1.docker.io":
		return "docker.io"
	}
	return h
}
