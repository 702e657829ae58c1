// Package redact removes secret values from what unstick writes or prints. It has two halves:
//
//   - one redactor for free text that must be kept (log lines, event messages, condition and
//     status messages, Helm release descriptions, every string a report quotes): String, Line,
//     Lines and Text;
//   - the allowlist walker (Apply) that `collect` and fix's evidence use to keep only the
//     fields of an object the checks read (the table lives in internal/snapshot).
package redact

import (
	"regexp"
	"strings"

	"github.com/unstick-dev/unstick/internal/lazyre"
)

// Mask replaces every value redacted.
const Mask = "[redacted]"

// LastApplied is the annotation kubectl apply keeps a full copy of the object in (a Secret's
// included, with its data).
const LastApplied = "kubectl.kubernetes.io/last-applied-configuration"

// KeepEnvPrefix marks the only environment and ConfigMap values the checks read:
// system-upgrade-controller settings (SYSTEM_UPGRADE_*), configuration rather than secrets.
const KeepEnvPrefix = "SYSTEM_UPGRADE_"

// CheckinIntervalEnv is the Fleet agent's check-in interval setting: kept only when its
// value is a Go duration, which cannot carry anything but a number and units.
const CheckinIntervalEnv = "CHECKIN_INTERVAL"

// NotDuration replaces a check-in interval that is no Go duration: unlike Mask, which a bundle
// written before the interval was kept also holds, it says the value was there and unusable.
const NotDuration = "[redacted: not a duration]"

// passSeg is a key segment that names a password only as a whole segment (DB_PASS, --pw):
// inside a word it is something else (bypass, passthrough).
const passSeg = `pass|pw`

// credKey is the part of a key name that says its value is a credential.
const credKey = `password|passwd|passphrase|pwd|token|api[_-]?key|access[_-]?key|secret[_-]?key|client[_-]?secret|private[_-]?key|client-key-data|credentials?|signature`

var (
	// Authorization: Bearer x / Proxy-Authorization: Basic x / "authorization":"Bearer x".
	authHeader = lazyre.New(`(?i)((?:proxy-)?authorization["']?\s*[:=]\s*["']?(?:bearer|basic|token|digest|negotiate)?\s*)([^\s"',;]+)`)
	// A bare "Bearer x" or "Basic x" (a token that is at least 8 characters long).
	bearer = lazyre.New(`(?i)\b(bearer|basic)(\s+)([A-Za-z0-9._~+/=-]{8,})`)
	// key=value, key: value, "key":"value" for keys naming credentials. "secret" alone is
	// left out: "failed to get secret: secrets \"x\" not found" is a message, not a secret.
	// Ruby's `:password => "x"` too.
	keyValue = lazyre.New(`(?i)([A-Za-z0-9_.-]*(?:` + credKey + `)[A-Za-z0-9_-]*["']?\s*(?:=>|[:=])\s*)("[^"]*"|'[^']*'|[^\s,;&"'}]+)`)
	// "key value" for command-line flags naming credentials: --token X, -password X.
	flagSpace = lazyre.New(`(?i)(\s|^|["'])(--?[A-Za-z0-9_-]*(?:` + credKey + `|auth|session)[A-Za-z0-9_-]*|--?(?:[A-Za-z0-9]+-)*(?:` + passSeg + `)(?:-[A-Za-z0-9]+)*)(\s+)([^\s"',;]+)`)
	// "token X", "password X": a bare word followed by a value that is not prose (see
	// prose below): "for new token" and "token used before issued" are messages.
	wordSpace = lazyre.New(`(?i)\b([A-Za-z0-9_]*(?:token|password|passwd|passphrase|api[_-]?key))(\s+)([A-Za-z0-9._~+/=:-]{8,})`)
	// The docker config "auth" key (base64 of user:password) and other exact auth keys.
	authKey = lazyre.New(`(?i)(["']?\b(?:auth|x-api-auth-header|x-auth-token|x-api-key|api-key|apikey)["']?\s*[:=]\s*)("[^"]*"|'[^']*'|[^\s,;&"'}]+)`)
	// Cookie and Set-Cookie headers, and x-...-auth/-token/-key/-secret/-session headers:
	// the whole value to the end of the line or quote.
	header = lazyre.New(`(?i)(\b(?:set-)?cookie\s*:\s*|\bx-[a-z0-9-]*(?:auth|token|key|secret|session)[a-z0-9-]*\s*:\s*)([^"'\r\n]+)`)
	// Session cookies and keys: R_SESS=x (Rancher's), session_id=x, sid=x, csrf=x, jwt=x.
	session = lazyre.New(`(?i)(\b[A-Za-z0-9_.-]*(?:sess|session|sid|csrf|jwt|cookie)[A-Za-z0-9_-]*["']?\s*[=:]\s*)("[^"]*"|'[^']*'|[^\s,;&"'}]+)`)
	// A lowercase word after "key:" continues a message rather than giving a value.
	plainWord = lazyre.New(`^[a-z]+$`)
	// secret=value (not "secret: ...", see above).
	secretEq = lazyre.New(`(?i)(\bsecret["']?\s*=\s*)("[^"]*"|'[^']*'|[^\s,;&"'}]+)`)
	// scheme://user:password@host
	// (the password runs to the authority's last "@": it may hold one)
	userinfo = lazyre.New(`([A-Za-z][A-Za-z0-9+.-]*://[^/\s:@]*:)([^/?#\s"'<>]+)(@)`)
	// A whole PEM block on one line (or a String with newlines), and the start of one whose
	// end is on a later line.
	pemBlock = lazyre.New(`(-----BEGIN [A-Z0-9 ]+-----)(?s:.*?)(-----END [A-Z0-9 ]+-----)`)
	pemStart = lazyre.New(`-----BEGIN [A-Z0-9 ]+-----`)
	pemEnd   = lazyre.New(`-----END [A-Z0-9 ]+-----`)
)

// String redacts a free text that may span lines (an event or condition message, a Helm
// release description, a report's quoted evidence): credentials are replaced by [redacted],
// the rest of the text (what the checks classify) is kept.
func String(s string) string {
	if !strings.Contains(s, "\n") {
		return Line(s)
	}
	return strings.Join(Lines(strings.Split(s, "\n")), "\n")
}

// Line returns a log line with credential values replaced by [redacted]; the rest of the
// line (the message the checks classify) is kept.
func Line(s string) string {
	if maySecret(s) {
		s = keyed(s)
	}
	return blobs(maskFolded(s))
}

// keyed redacts every credential that a key, header, scheme or PEM marker announces. Each
// form is looked for only when the line holds the words its expression cannot match
// without (a log line that passes maySecret for "key" has no cookie, PEM block or URL with a
// password): the expressions scan a line from every position, which made redacting the
// agents' logs most of a live scan's own CPU after decoding.
func keyed(s string) string {
	k := &keyer{s: s, l: fold(s)}
	return k.run()
}

func (k *keyer) run() string {
	k.step(strings.Contains(k.s, "-----BEGIN "), func(s string) string {
		s = pemBlock().ReplaceAllString(s, "${1}"+Mask+"${2}")
		if loc := pemStart().FindStringIndex(s); loc != nil && !pemEnd().MatchString(s[loc[1]:]) {
			s = s[:loc[1]] + Mask // the block goes on past this line
		}
		return s
	})
	k.step(strings.Contains(k.s, "://") && strings.Contains(k.s, "@"), func(s string) string {
		return userinfo().ReplaceAllString(s, "${1}"+Mask+"${3}")
	})
	k.step(k.any("cookie", "x-"), func(s string) string {
		return header().ReplaceAllStringFunc(s, func(m string) string {
			sub := header().FindStringSubmatch(m)
			if isMasked(sub[2]) {
				return m
			}
			return sub[1] + Mask
		})
	})
	k.step(k.any("authorization"), func(s string) string {
		return authHeader().ReplaceAllStringFunc(s, func(m string) string {
			sub := authHeader().FindStringSubmatch(m)
			if sub[2] == Mask || strings.HasPrefix(sub[2], "[") {
				return m
			}
			return sub[1] + Mask
		})
	})
	k.step(k.any("bearer", "basic"), func(s string) string {
		return bearer().ReplaceAllStringFunc(s, func(m string) string {
			sub := bearer().FindStringSubmatch(m)
			if strings.EqualFold(sub[3], "token") || strings.EqualFold(sub[3], "tokens") {
				return m
			}
			return sub[1] + sub[2] + Mask
		})
	})
	k.step(strings.Contains(k.s, "-") && (k.any(credWords...) || k.any("auth", "sess", "pw")), func(s string) string {
		return flagSpace().ReplaceAllStringFunc(s, func(m string) string {
			sub := flagSpace().FindStringSubmatch(m)
			if isMasked(sub[4]) || strings.HasPrefix(sub[4], "-") {
				return m // the next flag, not a value
			}
			return sub[1] + sub[2] + sub[3] + Mask
		})
	})
	pair := strings.ContainsAny(k.s, ":=")
	k.pairs(pair && k.any(credWords...), keyValue)
	k.pairs(pair && k.any("auth", "apikey", "api-key"), authKey)
	k.pairs(pair && k.any("sess", "sid", "csrf", "jwt", "cookie"), session)
	k.step(k.any("token", "pass", "key"), func(s string) string {
		return wordSpace().ReplaceAllStringFunc(s, func(m string) string {
			sub := wordSpace().FindStringSubmatch(m)
			if plainWord().MatchString(sub[3]) || isMasked(sub[3]) {
				return m
			}
			return sub[1] + sub[2] + Mask
		})
	})
	k.step(strings.Contains(k.s, "=") && k.any("secret"), func(s string) string {
		return secretEq().ReplaceAllStringFunc(s, func(m string) string {
			sub := secretEq().FindStringSubmatch(m)
			if isMasked(sub[2]) {
				return m
			}
			return sub[1] + quoteLike(sub[2])
		})
	})
	k.moreForms()
	return k.s
}

// credWords are words one of which every key that credKey matches holds (password,
// passwd and passphrase hold "pass"; the api, access, secret and private keys "key").
var credWords = []string{"pass", "pwd", "token", "key", "secret", "credential", "signature"}

// keyer redacts one line form by form, keeping the line folded to lower case beside it.
// every applies every form whatever the line holds (the tests' reference).
type keyer struct {
	s, l  string
	every bool
}

// fold is s as a case-insensitive expression sees it, in lower case: strings.ToLower folds
// the Kelvin sign to "k"; the long s, which (?i) matches as "s", is folded here.
func fold(s string) string { return strings.ReplaceAll(strings.ToLower(s), "ſ", "s") }

func (k *keyer) any(words ...string) bool {
	for _, w := range words {
		if strings.Contains(k.l, w) {
			return true
		}
	}
	return false
}

// step applies f when need holds.
func (k *keyer) step(need bool, f func(string) string) {
	if !need && !k.every {
		return
	}
	if n := f(k.s); n != k.s {
		k.s, k.l = n, fold(n)
	}
}

// pairs masks the values of re's key-value pairs, unless a pair reads as prose.
func (k *keyer) pairs(need bool, expr func() *regexp.Regexp) {
	k.step(need, func(s string) string {
		re := expr()
		return re.ReplaceAllStringFunc(s, func(m string) string {
			sub := re.FindStringSubmatch(m)
			if isMasked(sub[2]) || prose(sub[1], sub[2]) {
				// "failed to fetch anonymous token: unexpected status" is prose, not a pair.
				return m
			}
			return sub[1] + quoteLike(sub[2])
		})
	})
}

// prose says a "key: value" match is a message going on rather than a pair.
// A lowercase word after a password's key is the password, unless it is a word of a message
// about one ("password: required").
func prose(key, value string) bool {
	if !strings.Contains(key, ":") || !plainWord().MatchString(value) {
		return false
	}
	return !passwordKey(key) || messageWords[strings.ToLower(value)]
}

// maySecret is a cheap filter: most log lines name no credential at all.
func maySecret(s string) bool {
	l := fold(s) // as the case-insensitive expressions read it: "paſsword" is "password"
	for _, w := range []string{"auth", "bearer", "basic", "pass", "pw", "token", "key", "secret", "credential", "@", "%40", "sess", "sid", "sig", "csrf", "jwt", "cookie", "-----begin"} {
		if strings.Contains(l, w) {
			return true
		}
	}
	return false
}

func isMasked(v string) bool {
	return strings.Trim(v, `"' `) == Mask
}

// quoteLike keeps the quotes a value had.
func quoteLike(v string) string {
	if len(v) >= 2 && (v[0] == '"' || v[0] == '\'') && v[len(v)-1] == v[0] {
		return string(v[0]) + Mask + string(v[0])
	}
	return Mask
}

// Lines redacts every line in place and returns the slice. A PEM block that spans lines
// (a key printed to a log) is masked from its BEGIN line to its END line; a base64 block
// wrapped over lines, and the body of a PEM block whose BEGIN line is not there (a log's
// tail that starts inside it), are masked whole; a value alone on the line below its key
// ("password:" then the password) is masked.
func Lines(lines []string) []string {
	maskWrapped(lines)
	inPEM, keyAbove := false, false
	for i, l := range lines {
		below := keyAbove
		keyAbove = !inPEM && maySecret(l) && trailingKey().MatchString(l)
		if below && !inPEM {
			l = nextLineValue(l)
		}
		if inPEM {
			if loc := pemEnd().FindStringIndex(l); loc != nil {
				lines[i] = Mask + Line(l[loc[0]:])
				inPEM = false
			} else {
				lines[i] = Mask
			}
			continue
		}
		if loc := pemStart().FindStringIndex(l); loc != nil && !pemEnd().MatchString(l[loc[1]:]) {
			inPEM = true
		}
		lines[i] = Line(l)
	}
	return lines
}

// Text redacts a multi-line text (a whole log).
func Text(b []byte) []byte {
	return []byte(strings.Join(Lines(strings.Split(string(b), "\n")), "\n"))
}
