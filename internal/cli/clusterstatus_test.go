package cli

import (
	"encoding/json"
	"regexp"
	"strings"
	"testing"

	junit "github.com/joshdk/go-junit"

	"github.com/unstick-dev/unstick/internal/finding"
)

// Every format tells the same status for every cluster of the example: the worst incident
// that affects it, wherever its evidence was read. prod-eu-2's only incident
// (rancher/drain-blocked, read on local) makes it an error cluster everywhere, and local,
// which holds the evidence of six incidents, is not a cluster without incidents.
func TestClusterStatusAgreesAcrossFormats(t *testing.T) {
	want := jsonStatuses(t, example)
	if want["prod-eu-2"] != "error" {
		t.Errorf("JSON: prod-eu-2 is %q, want error (incident rancher/drain-blocked affects it)", want["prod-eu-2"])
	}
	if want["local"] == "ok" || want["dev-1"] != "ok" {
		t.Errorf("JSON: local %q, dev-1 %q", want["local"], want["dev-1"])
	}
	for format, parse := range map[string]func(*testing.T, string) map[string]string{
		"table": tableStatuses, "markdown": markdownStatuses, "html": htmlStatuses, "junit": junitStatuses, "sarif": sarifStatuses,
	} {
		t.Run(format, func(t *testing.T) {
			out, errOut, code := run(t, "scan", "--from", example, "-o", format)
			if code != ExitFindings {
				t.Fatalf("exit %d, stderr %s", code, errOut)
			}
			got := parse(t, out)
			for name, status := range want {
				if got[name] != status {
					t.Errorf("%s: cluster %s is %q, JSON says %q", format, name, got[name], status)
				}
			}
			if len(got) != len(want) {
				t.Errorf("%s: %d clusters, JSON has %d: %v", format, len(got), len(want), got)
			}
		})
	}
	// Filtered to the cluster an incident is about, the cluster still reads as affected.
	out, _, _ := run(t, "scan", "--from", example, "-o", "json", "--only-cluster", "prod-eu-2")
	if got := statusesOf(t, out); got["prod-eu-2"] != "error" {
		t.Errorf("--only-cluster prod-eu-2: prod-eu-2 is %q, want error", got["prod-eu-2"])
	}
}

func jsonStatuses(t *testing.T, from string) map[string]string {
	t.Helper()
	out, errOut, _ := run(t, "scan", "--from", from, "-o", "json")
	if out == "" {
		t.Fatalf("no JSON: %s", errOut)
	}
	return statusesOf(t, out)
}

func statusesOf(t *testing.T, out string) map[string]string {
	t.Helper()
	var r struct {
		Clusters []struct{ Name, Status string }
	}
	if err := json.Unmarshal([]byte(out), &r); err != nil {
		t.Fatal(err)
	}
	m := map[string]string{}
	for _, c := range r.Clusters {
		m[c.Name] = c.Status
	}
	return m
}

// tableStatuses reads the CLUSTERS section: NAME ROLE OBJECTS FINDINGS INCIDENTS STATUS CONTEXT.
func tableStatuses(t *testing.T, out string) map[string]string {
	_, section, ok := strings.Cut(out, "\nCLUSTERS\n")
	if !ok {
		t.Fatal("no CLUSTERS section")
	}
	m := map[string]string{}
	for _, line := range strings.Split(section, "\n")[1:] {
		f := strings.Fields(line)
		if len(f) < 6 || !strings.HasPrefix(line, "  ") {
			break
		}
		m[f[0]] = f[5]
	}
	return m
}

func markdownStatuses(t *testing.T, out string) map[string]string {
	_, section, ok := strings.Cut(out, "## Clusters\n")
	if !ok {
		t.Fatal("no Clusters section")
	}
	m := map[string]string{}
	for _, line := range strings.Split(section, "\n") {
		cells := strings.Split(line, "|")
		if len(cells) < 8 || strings.TrimSpace(cells[1]) == "Cluster" || strings.HasPrefix(cells[1], "---") {
			continue
		}
		m[strings.TrimSpace(cells[1])] = strings.TrimSpace(cells[6])
	}
	return m
}

var tileRE = regexp.MustCompile(`class="tile [a-z]+" data-name="([^"]+)" data-sev="([a-z]+)"`)

// htmlStatuses reads the cluster grid's tiles; a tile of a cluster no incident affects is "ok".
func htmlStatuses(t *testing.T, out string) map[string]string {
	m := map[string]string{}
	for _, s := range tileRE.FindAllStringSubmatch(out, -1) {
		m[s[1]] = s[2]
	}
	return m
}

// junitStatuses reads each suite's status property, and checks that the suite fails exactly
// when that status is at or above --fail-on (error).
func junitStatuses(t *testing.T, out string) map[string]string {
	suites, err := junit.Ingest([]byte(out))
	if err != nil {
		t.Fatal(err)
	}
	m := map[string]string{}
	for _, s := range suites {
		status := s.Properties["status"]
		m[s.Name] = status
		sev, err := finding.ParseSeverity(status)
		if blocking := err == nil && sev >= finding.Error; blocking != (s.Totals.Failed > 0) {
			t.Errorf("junit: suite %s has %d failures with status %s", s.Name, s.Totals.Failed, status)
		}
	}
	return m
}

func sarifStatuses(t *testing.T, out string) map[string]string {
	var log struct {
		Runs []struct {
			Properties struct {
				ClusterStatus map[string]string `json:"clusterStatus"`
			} `json:"properties"`
		} `json:"runs"`
	}
	if err := json.Unmarshal([]byte(out), &log); err != nil || len(log.Runs) != 1 {
		t.Fatalf("sarif: %v", err)
	}
	return log.Runs[0].Properties.ClusterStatus
}
