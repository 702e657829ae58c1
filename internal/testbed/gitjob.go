package testbed

// GitJobImage is the image the gitjob controller writes into the Jobs it creates (the fleet
// chart passes its own image as --gitjob-image). KWOK runs those Jobs' pods to completion
// without pulling it.
const GitJobImage = "rancher/fleet:v0.16.0"

// StartGitJob runs Fleet's gitjob controller beside the Fleet controller, as the fleet
// chart's gitjob Deployment runs it: `fleetcontroller gitjob --gitjob-image …` in
// cattle-fleet-system. It watches GitRepos, resolves each repository's HEAD with go-git's
// ls-remote inside its own process (every pollingInterval), records the result in the
// GitRepo's status, conditions and events, and creates the gitjob Job that clones and runs
// `fleet apply`. The ls-remote is real — a repository the test serves on the loopback is
// read or refused as a Git server would — and so is the Job's creation (quotas, admission);
// the Job's pod is KWOK's, completed without running, so no Bundle is written by it.
// Opt-in: a test that does not need GitRepos does not start it.
func (f *Fleet) StartGitJob(t T) *Proc {
	t.Helper()
	env := append(fleetProcessEnv(f.Bed.kubeconfigDirect()), "GITOPS_METRICS_BIND_ADDRESS=0")
	f.GitJob = f.Bed.Run(t, "fleet-gitjob", f.bins["fleetcontroller"], []string{
		"gitjob",
		"--gitjob-image", GitJobImage,
		"--disable-metrics",
		// Its webhook receiver: a port of the loopback the kernel picks, so beds side by side
		// do not meet on the default :8080.
		"--listen", "127.0.0.1:0",
	}, env)
	return f.GitJob
}
