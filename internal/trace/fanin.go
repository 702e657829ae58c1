package trace

import (
	"fmt"
	"sort"
	"strings"
)

// rowsNamed in a summary line before the rest are counted.
const rowsNamed = 5

// fanIn summarises one per-cluster stage over every row: failed when any row failed, waiting
// when any waits, reached when every row that applies reached it ("1,998 at the new
// deploymentID, 2 stopped: …"). Its time is when the last row reached it.
func fanIn(name string, rows []ClusterRow) Stage {
	st := Stage{Name: name}
	count := map[string]int{}
	var stopped []string
	multi := manyBundles(rows)
	for _, r := range rows {
		s := rowStage(r, name)
		count[s.Status]++
		st.refs = append(st.refs, s.refs...)
		switch {
		case s.Status == Failed || s.Status == Waiting:
			who := r.Cluster
			if multi {
				who += " " + r.Bundle
			}
			stopped = append(stopped, who+" ("+firstLine(s.Detail)+")")
		case s.Status == Reached && s.At != nil && (st.At == nil || s.At.After(*st.At)):
			st.At = s.At
		}
	}
	st.Status = fanStatus(count, len(rows))
	if st.Status != Reached {
		st.At = nil
	}
	st.Detail = fanDetail(name, count, len(rows), stopped)
	return st
}

func manyBundles(rows []ClusterRow) bool {
	for _, r := range rows {
		if r.Bundle != rows[0].Bundle {
			return true
		}
	}
	return false
}

func rowStage(r ClusterRow, name string) Stage {
	for _, s := range r.Stages {
		if s.Name == name {
			return s
		}
	}
	return Stage{Name: name, Status: None}
}

func fanStatus(count map[string]int, n int) string {
	switch {
	case n == 0:
		return Waiting
	case count[Failed] > 0:
		return Failed
	case count[Waiting] > 0:
		return Waiting
	case count[Reached] > 0:
		return Reached
	case count[NotRead] > 0:
		return NotRead
	}
	return None
}

// reachedWords say what a row that reached a per-cluster stage is.
func reachedWords(stage string) string {
	switch stage {
	case StageDeployment:
		return "at the new deploymentID"
	case StageRelease:
		return "with the release deployed"
	}
	return "rolled out"
}

func fanDetail(name string, count map[string]int, n int, stopped []string) string {
	if n == 0 {
		return "no BundleDeployment"
	}
	parts := []string{fmt.Sprintf("%s of %s %s", num(count[Reached]), num(n), reachedWords(name))}
	if k := len(stopped); k > 0 {
		sort.Strings(stopped)
		shown := stopped
		if k > rowsNamed {
			shown = append(append([]string{}, stopped[:rowsNamed]...), fmt.Sprintf("and %d more", k-rowsNamed))
		}
		parts = append(parts, fmt.Sprintf("%s stopped: %s", num(k), strings.Join(shown, "; ")))
	}
	if k := count[NotRead]; k > 0 {
		parts = append(parts, num(k)+" not read")
	}
	if k := count[None]; k > 0 && name == StageRollout {
		parts = append(parts, num(k)+" without a workload")
	}
	return strings.Join(parts, ", ")
}

// num writes a count with thousands separators: 1,998.
func num(n int) string {
	s := fmt.Sprint(n)
	for i := len(s) - 3; i > 0; i -= 3 {
		s = s[:i] + "," + s[i:]
	}
	return s
}
