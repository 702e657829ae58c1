package classify

import (
	"regexp"
	"strings"
	"sync"
)

// Signature normalises a message for comparing the same failure across clusters: it lower-cases
// the text and replaces what differs from one cluster, pod or moment to the next — timestamps,
// log headers, URLs, IPs and ports, UIDs, digests and hex hashes, numbers, quoted object names,
// names that follow an object kind ("node ip-10-0-1-5", "job ns/apply-...") and generated names
// with random suffixes (pods, Rancher cluster IDs, Fleet cluster namespaces) — by placeholders,
// and keeps the error's words. Two agents failing with the same Helm error on different clusters
// give the same signature; different errors give different signatures.
func Signature(text string) string {
	s := normalize(text)
	for _, r := range sigSteps() {
		if r.need != "" && !strings.Contains(s, r.need) {
			continue
		}
		if r.fn != nil {
			s = r.re.ReplaceAllStringFunc(s, r.fn)
		} else {
			s = r.re.ReplaceAllString(s, r.repl)
		}
	}
	return strings.Join(strings.Fields(s), " ")
}

type sigStep struct {
	need string // a substring without which the step cannot match (cheap skip)
	re   *regexp.Regexp
	repl string
	fn   func(string) string
}

// keptKeys are the keys of key=value and JSON log fields whose values are the message itself.
var keptKeys = map[string]bool{
	"msg": true, "message": true, "err": true, "error": true, "level": true, "lvl": true,
	"reason": true, "severity": true,
}

// k8sSuffix is the alphabet of k8s.io/apimachinery/pkg/util/rand (no vowels, no 0/1/3), used for
// generated names (pod "-x2k4p" suffixes, ReplicaSet template hashes).
const k8sSuffix = `[bcdfghjklmnpqrstvwxz2456789]`

// sigSteps are compiled on the first Signature: only the verbs that group messages use them.
var sigSteps = sync.OnceValue(func() []sigStep {
	return []sigStep{
		// klog header: "E1129 07:58:02.123456       1 reflector.go:166] "
		{re: regexp.MustCompile(`(?m)^[iwef]\d{4} \d{2}:\d{2}:\d{2}\.\d+\s+\d+\s+[^\]\s]+\]\s*`), repl: ""},
		// URLs (their paths carry namespaces and names)
		{need: "://", re: regexp.MustCompile(`[a-z][a-z0-9+.-]*://[^\s"'<>]+`), repl: "<url>"},
		// timestamps
		{need: ":", re: regexp.MustCompile(`\d{4}-\d{2}-\d{2}[t ]\d{2}:\d{2}:\d{2}(?:[.,]\d+)?(?:z|[+-]\d{2}:?\d{2})?(?: [+-]\d{4} [a-z]{3,4})?`), repl: "<time>"},
		{re: regexp.MustCompile(`\b\d{4}[-/]\d{2}[-/]\d{2}\b`), repl: "<time>"},
		{need: ":", re: regexp.MustCompile(`\b\d{2}:\d{2}:\d{2}(?:\.\d+)?\b`), repl: "<time>"},
		// UIDs and digests
		{need: "-", re: regexp.MustCompile(`\b[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}\b`), repl: "<uid>"},
		{need: "sha256:", re: regexp.MustCompile(`\bsha256:[0-9a-f]{12,}\b`), repl: "<digest>"},
		// IPs with optional ports
		{need: "[", re: regexp.MustCompile(`\[[0-9a-f:]*:[0-9a-f:]*\](?::\d+)?`), repl: "<ip>"},
		{need: ".", re: regexp.MustCompile(`\b\d{1,3}(?:\.\d{1,3}){3}(?::\d+)?\b`), repl: "<ip>"},
		// logfmt key=value: keep the message keys, blank the others (time, caller, pod, cluster, ...)
		{need: "=", re: regexp.MustCompile(`\b([a-z][a-z0-9_.-]*)=("[^"]*"|[^\s"]+)`), fn: func(m string) string {
			k, _, _ := strings.Cut(m, "=")
			if keptKeys[k] {
				return m
			}
			return k + "=<v>"
		}},
		// JSON fields: "key":"value" / "key":value
		{need: `":`, re: regexp.MustCompile(`"([a-z][a-z0-9_.-]*)":\s*("[^"]*"|[^,}\s]+)`), fn: func(m string) string {
			k := m[1 : strings.Index(m[1:], `"`)+1]
			if keptKeys[k] {
				return m
			}
			return `"` + k + `":<v>`
		}},
		// Rancher cluster IDs, Fleet cluster namespaces
		{need: "cluster-fleet-", re: regexp.MustCompile(`\bcluster-fleet-[a-z0-9-]*?-[0-9a-f]{12}\b`), repl: "<ns>"},
		{need: "c-", re: regexp.MustCompile(`\bc-m-[a-z0-9]{8}\b|\bc-[a-z0-9]{5}\b`), repl: "<cluster>"},
		// quoted names (no spaces inside, and name-like: a - . / _ : or digit), e.g.
		// "fleet-agent-c-m-abcd1234", 'ns/name'; a quoted single word ("Unauthorized") is kept.
		{re: regexp.MustCompile(`"[^"\s]*"|'[^'\s]*'`), fn: func(m string) string {
			if !strings.ContainsAny(m[1:len(m)-1], "-./_:0123456789") {
				return m
			}
			return m[:1] + "<name>" + m[:1]
		}},
		// a name after an object kind, when it looks like a name (has - . / _ or a digit)
		{re: regexp.MustCompile(`\b(node|pod|namespace|cluster|job|plan|release|bundle|bundledeployment|secret|configmap|deployment|daemonset|statefulset|replicaset|serviceaccount|host|image|volume|container)(\s+)([^\s:,;()"']*[-./_0-9][^\s:,;()"']*)`), repl: "$1$2<name>"},
		// generated names: <base>-<template hash>-<5 random> or <base>-<5 random>
		{need: "-", re: regexp.MustCompile(`\b[a-z0-9]+(?:[-.][a-z0-9]+)*?-(?:` + k8sSuffix + `{6,10}-)?` + k8sSuffix + `{5}\b`), repl: "<pod>"},
		// hex hashes (7+ chars with a digit and a letter)
		{re: regexp.MustCompile(`\b[0-9a-f]{7,}\b`), fn: func(m string) string {
			if strings.ContainsAny(m, "0123456789") && strings.ContainsAny(m, "abcdef") {
				return "<hex>"
			}
			return m
		}},
		// numbers
		{re: regexp.MustCompile(`\d+`), repl: "#"},
	}
})
