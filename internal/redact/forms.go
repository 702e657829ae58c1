package redact

import (
	"regexp"
	"strings"

	"github.com/unstick-dev/unstick/internal/lazyre"
)

// Forms a credential takes in configuration dumps, connection strings and URLs, besides the
// key=value pairs of redact.go.
var (
	// A key one of whose segments is exactly "pass" or "pw": DB_PASS=x, pass: x, --pw=x.
	passKey = lazyre.New(`(?i)((?:^|[^A-Za-z0-9])(?:[A-Za-z0-9]+[_.-])*(?:` + passSeg + `)(?:[_.-][A-Za-z0-9]+)*["']?\s*(?:=>|[:=])\s*)("[^"]*"|'[^']*'|[^\s,;&"'}]+)`)
	// "secret":"x" and "client_secret": 'x': a quoted key and a quoted value are a pair, where
	// "failed to get secret: secrets \"x\" not found" is a message.
	jsonSecret = lazyre.New(`(?i)(["'](?:[A-Za-z0-9_.-]*[_.-])?secret["']\s*(?:=>|:)\s*)("[^"]*"|'[^']*')`)
	// URL-encoded pairs: password%3Dx, token%3Ax, up to an encoded & or ".
	encKey = lazyre.New(`(?i)((?:[A-Za-z0-9_.-]*(?:` + credKey + `)[A-Za-z0-9_-]*|(?:^|[^A-Za-z0-9])(?:[A-Za-z0-9]+[_.-])*(?:` + passSeg + `|sig))(?:%3D|%3A|%22%3A%22))((?:[^\s&"',;%]|%(?:[013-9A-Fa-f][0-9A-Fa-f]|2[013-57-9A-Fa-f]))+)`)
	// A URL-encoded URL with a password: https%3A%2F%2Fuser%3Apassword%40host.
	encUserinfo = lazyre.New(`(?i)([A-Za-z][A-Za-z0-9+.-]*%3A%2F%2F[A-Za-z0-9._~-]*%3A)((?:[^\s%/?#]|%(?:[013-9A-Fa-f][0-9A-Fa-f]|2[0-9A-Ea-e]))+)(%40)`)
	// A Go SQL driver DSN: user:password@tcp(host:3306)/db (the password up to that "@").
	dsn = lazyre.New(`(\b[A-Za-z0-9_.-]+:)([^\s@]\S*?)(@(?:tcp|tcp4|tcp6|udp|unix)\()`)
	// An Azure shared access signature: ?sv=…&sig=x.
	sasSig = lazyre.New(`(?i)((?:^|[?&;\s"'])sig=)([^\s&"'#]+)`)
	// A key that announces a credential at the end of a line: its value is on the next one.
	trailingKey = lazyre.New(`(?i)(?:[A-Za-z0-9_.-]*(?:` + credKey + `)[A-Za-z0-9_-]*|(?:^|[^A-Za-z0-9])(?:[A-Za-z0-9]+[_.-])*(?:` + passSeg + `)|\bsecret)["']?\s*(?:=>|[:=])\s*$`)
	// A value alone on its line: one word or one quoted string, maybe followed by a comma.
	loneValue = lazyre.New(`^(\s*)("[^"]*"|'[^']*'|[^\s"',:]+(?::[^\s"',]+)*)(\s*,?\s*)$`)
)

// moreForms masks the forms above, each looked for only when the line holds what it needs.
func (k *keyer) moreForms() {
	k.step(k.any("%3a%2f%2f"), func(s string) string { return encUserinfo().ReplaceAllString(s, "${1}"+Mask+"${3}") })
	k.step(strings.Contains(k.s, "@") && strings.Contains(k.s, "("), func(s string) string {
		return dsn().ReplaceAllString(s, "${1}"+Mask+"${3}")
	})
	pair := strings.ContainsAny(k.s, ":=")
	k.form(pair && k.any("pass", "pw"), passKey)
	k.form(k.any("secret"), jsonSecret)
	k.form(k.any("%3d", "%3a"), encKey)
	k.form(k.any("sig="), sasSig)
}

// form masks the values re finds, except values masked already.
func (k *keyer) form(need bool, expr func() *regexp.Regexp) {
	k.step(need, func(s string) string {
		re := expr()
		return re.ReplaceAllStringFunc(s, func(m string) string {
			sub := re.FindStringSubmatch(m)
			if isMasked(sub[2]) || strings.HasPrefix(sub[2], Mask) {
				return m
			}
			return sub[1] + quoteLike(sub[2])
		})
	})
}

// nextLineValue masks the value on a line below a key that ends the line above; a line that
// is more than a value (a nested YAML key, a sentence) is left alone.
func nextLineValue(l string) string {
	sub := loneValue().FindStringSubmatch(l)
	if sub == nil || isMasked(sub[2]) || strings.HasPrefix(strings.TrimSpace(l), "-----") {
		return l
	}
	return sub[1] + quoteLike(sub[2]) + sub[3]
}

// messageWords follow "password:" in messages about a password rather than holding one.
var messageWords = map[string]bool{
	"required": true, "invalid": true, "incorrect": true, "wrong": true, "missing": true, "empty": true,
	"expired": true, "mismatch": true, "denied": true, "failed": true, "unknown": true, "none": true,
	"null": true, "changed": true, "reset": true, "updated": true, "set": true, "not": true, "is": true,
	"was": true, "must": true, "cannot": true, "too": true, "the": true, "a": true, "an": true,
	"authentication": true, "error": true, "true": true, "false": true,
}

// passwordKey says a key names a password (not a token: "token: unexpected" is prose).
func passwordKey(key string) bool {
	k := strings.ToLower(key)
	return strings.Contains(k, "pass") || strings.Contains(k, "pwd")
}
