package check

import "regexp"

// quotaRE reads the ResourceQuota's name from the API server's refusals: "exceeded quota:
// NAME, requested: …" and "failed quota: NAME: must specify …" (k8s.io/apiserver
// pkg/admission/plugin/resourcequota/controller.go).
var quotaRE = regexp.MustCompile(`(?:exceeded|failed) quota: ([a-z0-9]([-a-z0-9.]*[a-z0-9])?)[,:]`)

// quotaName is the ResourceQuota a refusal names, "" if none.
func quotaName(msg string) string {
	if m := quotaRE.FindStringSubmatch(msg); m != nil {
		return m[1]
	}
	return ""
}
