// Package messages reads the error messages that controllers quote from one another — a Fleet
// BundleDeployment's condition quoting Helm, a Helm release's description quoting the API
// server, an Event quoting an admission webhook — and returns the facts each names: the
// missing kind, the webhook and its Service, the quota, the terminating namespace, the object
// and field manager of a server-side apply conflict, the release an object belongs to, the
// immutable field. One parser per message family; each takes the text as quoted anywhere
// (a JSON log line's escaped quotes and "\n" included) and reports only what the text says.
//
// The strings come from the upstream code that writes them, cited in each parser's comment
// and beside each case of the tests.
package messages

import "strings"

// unquote undoes the escaping a message gets when it is quoted inside a JSON log line or a
// Go-quoted error ("\"", "\n"), so that one expression reads every place it is quoted.
func unquote(s string) string {
	if !strings.Contains(s, `\`) {
		return s
	}
	r := strings.NewReplacer(`\\\"`, `"`, `\"`, `"`, `\\n`, "\n", `\n`, "\n", `\t`, "\t")
	return r.Replace(s)
}

// groupVersion splits "apps/v1" into ("apps", "v1") and "v1" into ("", "v1").
func groupVersion(gv string) (group, version string) {
	if g, v, ok := strings.Cut(gv, "/"); ok {
		return g, v
	}
	return "", gv
}
