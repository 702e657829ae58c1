package redact

import "testing"

// keyedLines hold every form keyed masks, in the cases and foldings a case-insensitive
// expression matches (the Kelvin sign for "k", the long s for "s").
var keyedLines = []string{
	`-----BEGIN RSA PRIVATE KEY-----MIIEpAIBAAKCAQEA-----END RSA PRIVATE KEY-----`,
	`cert: -----BEGIN CERTIFICATE----- MIIB`,
	`git clone https://oauth2:glpat-Xy12ab34@gitlab.example.com/org/repo.git`,
	`Set-Cookie: R_SESS=token-abc123:xyz; Path=/`, `X-Api-Auth-Header: s3cr3t-value`,
	`Proxy-Authorization: Basic dXNlcjpwYXNzd29yZA==`, `"authorization":"Bearer eyJhbGciOiJSUzI1NiJ9"`,
	`curl -H 'Bearer abcdefgh12345678'`, `BASIC QWxhZGRpbjpvcGVuIHNlc2FtZQ==`,
	`helm install --set-password hunter2 --token abcd1234 -pw sekrit`, `run --SESSION xyz123 --auth qq`,
	`DB_PASSWORD=hunter2`, `password: hunter2`, `"apiKey": "AKIAIOSFODNN7EXAMPLE"`, `client_secret=abc`,
	`access-key: AKIA1234`, `credentials = x1`, `signature=deadbeef`, `pwd=x`, `PassWord => "x"`,
	`"auth":"dXNlcjpwYXNz"`, `x-api-key: k123`, `apikey=k123`, `R_SESS=abc`, `session_id=1`, `sid=abc`,
	`csrf: t0k3n`, `JWT=eyJ`, `cookie=abc`, `token eyJhbGciOiJIUzI1NiJ9x`, `my password hunter2hunter2`,
	`secret=value`, `SECRET = "v"`, `postgres%3A%2F%2Fuser%3Ap4ss%40db`, `user:p4ss@tcp(db:3306)/app`,
	`DB_PASS: x`, `pw=x`, `"client_secret": 'x'`, `password%3Dhunter2&x=1`, `token%22%3A%22abc%22`,
	`https://acct.blob.core.windows.net/c?sv=2020&sig=abc%2Bdef`,
	"pa\u017fsword=hunter2", "\u212Aey: x \u017fecret=v", "to\u212Aen=abc", "\u017fid=abc", "X-\u212Aey: v",
	`failed to get secret: secrets "x" not found`, `level=info msg="bundle key updated" key=abc`,
	`no credential here`, ``,
}

// keyed looks for a form only where the line holds the words the form needs: it must mask
// exactly what applying every form masks.
func TestKeyedMasksWhatEveryFormMasks(t *testing.T) {
	for _, l := range keyedLines {
		if got, want := keyed(l), (&keyer{s: l, l: fold(l), every: true}).run(); got != want {
			t.Errorf("keyed(%q)\n got %q\nwant %q (every form applied)", l, got, want)
		}
	}
}

func FuzzKeyedMasksWhatEveryFormMasks(f *testing.F) {
	for _, l := range keyedLines {
		f.Add(l)
	}
	f.Fuzz(func(t *testing.T, l string) {
		if got, want := keyed(l), (&keyer{s: l, l: fold(l), every: true}).run(); got != want {
			t.Fatalf("keyed(%q)\n got %q\nwant %q (every form applied)", l, got, want)
		}
	})
}

// A case-insensitive expression reads the long s as "s": a line that names its credential
// with it is redacted as one that does not.
func TestLineReadsTheLongSAsS(t *testing.T) {
	for _, l := range []string{"pa\u017fsword=hunter2", "to\u212Aen: abcdef123"} {
		if got := Line(l); got == l {
			t.Errorf("Line(%q) kept the value", l)
		}
	}
}
