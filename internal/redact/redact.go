// Package redact removes secret values from what unstick writes or prints: log lines (bearer
// tokens, passwords, kubeconfig credentials, URL passwords) and objects (Secret payloads,
// ConfigMap values, container environment values, last-applied-configuration annotations).
// It is used wherever text read from a cluster leaves the process: the loaders (so reports
// only ever quote redacted log lines), `collect` bundles and the evidence `fix` saves.
package redact

import (
	"regexp"
	"strings"
)

// Mask replaces every value redacted.
const Mask = "[redacted]"

// LastApplied is the annotation kubectl apply keeps a full copy of the object in (a Secret's
// included, with its data).
const LastApplied = "kubectl.kubernetes.io/last-applied-configuration"

// KeepEnvPrefix marks the only environment and ConfigMap values the checks read:
// system-upgrade-controller settings (SYSTEM_UPGRADE_*), configuration rather than secrets.
const KeepEnvPrefix = "SYSTEM_UPGRADE_"

var (
	// Authorization: Bearer x / Proxy-Authorization: Basic x / "authorization":"Bearer x".
	authHeader = regexp.MustCompile(`(?i)((?:proxy-)?authorization["']?\s*[:=]\s*["']?(?:bearer|basic|token|digest|negotiate)?\s*)([^\s"',;]+)`)
	// A bare "Bearer x" or "Basic x" (a token that is at least 8 characters long).
	bearer = regexp.MustCompile(`(?i)\b(bearer|basic)(\s+)([A-Za-z0-9._~+/=-]{8,})`)
	// key=value, key: value, "key":"value" for keys naming credentials. "secret" alone is
	// left out: "failed to get secret: secrets \"x\" not found" is a message, not a secret.
	keyValue = regexp.MustCompile(`(?i)([A-Za-z0-9_.-]*(?:password|passwd|passphrase|pwd|token|api[_-]?key|access[_-]?key|secret[_-]?key|client[_-]?secret|private[_-]?key|client-key-data|credentials?)[A-Za-z0-9_-]*["']?\s*[:=]\s*)("[^"]*"|'[^']*'|[^\s,;&"'}]+)`)
	// A lowercase word after "key:" continues a message rather than giving a value.
	plainWord = regexp.MustCompile(`^[a-z]+$`)
	// secret=value (not "secret: ...", see above).
	secretEq = regexp.MustCompile(`(?i)(\bsecret["']?\s*=\s*)("[^"]*"|'[^']*'|[^\s,;&"'}]+)`)
	// scheme://user:password@host
	userinfo = regexp.MustCompile(`([A-Za-z][A-Za-z0-9+.-]*://[^/\s:@]*:)([^/\s@]+)(@)`)
)

// Line returns a log line with credential values replaced by [redacted]; the rest of the
// line (the message the checks classify) is kept.
func Line(s string) string {
	if !maySecret(s) {
		return s
	}
	s = userinfo.ReplaceAllString(s, "${1}"+Mask+"${3}")
	s = authHeader.ReplaceAllStringFunc(s, func(m string) string {
		sub := authHeader.FindStringSubmatch(m)
		if sub[2] == Mask || strings.HasPrefix(sub[2], "[") {
			return m
		}
		return sub[1] + Mask
	})
	s = bearer.ReplaceAllStringFunc(s, func(m string) string {
		sub := bearer.FindStringSubmatch(m)
		if strings.EqualFold(sub[3], "token") || strings.EqualFold(sub[3], "tokens") {
			return m
		}
		return sub[1] + sub[2] + Mask
	})
	s = keyValue.ReplaceAllStringFunc(s, func(m string) string {
		sub := keyValue.FindStringSubmatch(m)
		if isMasked(sub[2]) || (strings.Contains(sub[1], ":") && plainWord.MatchString(sub[2])) {
			// "failed to fetch anonymous token: unexpected status" is prose, not a pair.
			return m
		}
		return sub[1] + quoteLike(sub[2])
	})
	s = secretEq.ReplaceAllStringFunc(s, func(m string) string {
		sub := secretEq.FindStringSubmatch(m)
		if isMasked(sub[2]) {
			return m
		}
		return sub[1] + quoteLike(sub[2])
	})
	return s
}

// maySecret is a cheap filter: most log lines name no credential at all.
func maySecret(s string) bool {
	l := strings.ToLower(s)
	for _, w := range []string{"auth", "bearer", "basic", "pass", "pwd", "token", "key", "secret", "credential", "@"} {
		if strings.Contains(l, w) {
			return true
		}
	}
	return false
}

func isMasked(v string) bool {
	return strings.Trim(v, `"'`) == Mask
}

// quoteLike keeps the quotes a value had.
func quoteLike(v string) string {
	if len(v) >= 2 && (v[0] == '"' || v[0] == '\'') && v[len(v)-1] == v[0] {
		return string(v[0]) + Mask + string(v[0])
	}
	return Mask
}

// Lines redacts every line in place and returns the slice.
func Lines(lines []string) []string {
	for i, l := range lines {
		lines[i] = Line(l)
	}
	return lines
}

// Text redacts a multi-line text (a whole log).
func Text(b []byte) []byte {
	return []byte(strings.Join(Lines(strings.Split(string(b), "\n")), "\n"))
}

// Object redacts an object (as decoded JSON) in place and counts what it removed, under the
// names `collect` reports: every Secret's data and stringData, ConfigMap values and
// binaryData (except SYSTEM_UPGRADE_* settings), environment values of containers (except
// SYSTEM_UPGRADE_* settings) and last-applied-configuration annotations, whatever the kind.
// Helm release Secrets are the caller's business (collect keeps a metadata-only record).
func Object(kind string, obj map[string]any, counts map[string]int) {
	if md, ok := obj["metadata"].(map[string]any); ok {
		if ann, ok := md["annotations"].(map[string]any); ok {
			if _, ok := ann[LastApplied]; ok {
				delete(ann, LastApplied)
				counts["last-applied-configuration annotations"]++
			}
		}
	}
	switch kind {
	case "Secret":
		data, _ := obj["data"].(map[string]any)
		for k := range data {
			data[k] = ""
		}
		_, hasString := obj["stringData"]
		if len(data) > 0 || hasString {
			counts["Secret payloads"]++
		}
		delete(obj, "stringData")
	case "ConfigMap":
		data, _ := obj["data"].(map[string]any)
		n := 0
		for k, v := range data {
			if !strings.HasPrefix(k, KeepEnvPrefix) && v != "" {
				data[k] = ""
				n++
			}
		}
		if _, ok := obj["binaryData"]; ok {
			delete(obj, "binaryData")
			n++
		}
		if n > 0 {
			counts["ConfigMap payloads"]++
		}
	default:
		env(obj, counts)
	}
}

// env redacts the value of every container environment variable (not valueFrom, which names
// a Secret or ConfigMap key, not a value) except SYSTEM_UPGRADE_* settings: any of them may
// hold a credential whatever its name (a proxy URL with a password, a DSN, a token).
func env(v any, counts map[string]int) {
	switch x := v.(type) {
	case map[string]any:
		for k, val := range x {
			if k == "env" {
				if list, ok := val.([]any); ok {
					for _, e := range list {
						if m, ok := e.(map[string]any); ok {
							name, _ := m["name"].(string)
							if s, has := m["value"].(string); has && s != "" && s != Mask && !strings.HasPrefix(name, KeepEnvPrefix) {
								m["value"] = Mask
								counts["environment values"]++
							}
						}
					}
				}
				continue
			}
			env(val, counts)
		}
	case []any:
		for _, e := range x {
			env(e, counts)
		}
	}
}
