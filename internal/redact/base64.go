package redact

import (
	"encoding/base64"
	"strings"
	"unicode/utf8"

	"github.com/unstick-dev/unstick/internal/lazyre"
)

// b64Run is a run of base64 (standard or URL alphabet) long enough to hide a credential: a
// docker config's "auth" (user:password), a kubeconfig or a key pasted into a message.
var b64Run = lazyre.New(`[A-Za-z0-9+/_-]{16,}={0,2}`)

// userPass is what a Basic auth or docker "auth" value decodes to.
var userPass = lazyre.New(`^[^\s:]{1,128}:\S{3,}$`)

// maxBlob bounds how much of one run is decoded: a credential is short, a 100 MB base64 line
// is a payload nobody quotes.
const maxBlob = 64 << 10

// blobs masks every base64 run that decodes to a credential, as far as depth 2 (base64 of
// a docker config whose "auth" is base64 again).
func blobs(s string) string {
	return blobsDepth(s, 2)
}

func blobsDepth(s string, depth int) string {
	if depth == 0 || len(s) < 16 {
		return s
	}
	return b64Run().ReplaceAllStringFunc(s, func(m string) string {
		if len(m) > maxBlob {
			return m
		}
		dec, ok := decodeText(m)
		if !ok {
			return m
		}
		if userPass().MatchString(dec) || pemStart().MatchString(dec) || keyed(dec) != dec || blobsDepth(dec, depth-1) != dec {
			return Mask
		}
		return m
	})
}

// decodeText decodes a base64 run in any of its four forms and says whether the result is
// text (a binary hash or an ID that happens to be valid base64 is not a credential we can
// recognise).
func decodeText(m string) (string, bool) {
	for _, enc := range []*base64.Encoding{base64.StdEncoding, base64.URLEncoding, base64.RawStdEncoding, base64.RawURLEncoding} {
		b, err := enc.DecodeString(m)
		if err != nil {
			continue
		}
		if !utf8.Valid(b) {
			return "", false
		}
		t := string(b)
		if strings.IndexFunc(t, func(r rune) bool { return r < 0x20 && r != '\n' && r != '\r' && r != '\t' || r == 0x7f }) >= 0 {
			return "", false
		}
		return t, true
	}
	return "", false
}
