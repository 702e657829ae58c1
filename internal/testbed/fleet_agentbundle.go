package testbed

// ManageAgentDeployments gives Fleet's agentmanagement the agent settings the fleet chart always
// sets on it (values agent.replicas and agent.leaderElection: FLEET_AGENT_REPLICA_COUNT and
// FLEET_AGENT_ELECTION_*) and restarts it. Without them its manage-agent handler fails
// ("environment variable FLEET_AGENT_ELECTION_LEASE_DURATION not set") and renders no
// fleet-agent-<cluster> Bundle; with them it does, and each registered agent applies that
// bundle downstream: the cattle-fleet-system/fleet-agent Deployment Fleet manages (its pods
// are KWOK's, the agent itself keeps running as the bed's process). Opt-in, so tests that do
// not want Fleet's agent bundle on their beds keep the beds as they were.
func (f *Fleet) ManageAgentDeployments() error {
	p := f.AgentManagement
	p.mu.Lock()
	p.env = append(p.env,
		"FLEET_AGENT_REPLICA_COUNT=1",
		"FLEET_AGENT_ELECTION_LEASE_DURATION=30s",
		"FLEET_AGENT_ELECTION_RETRY_PERIOD=10s",
		"FLEET_AGENT_ELECTION_RENEW_DEADLINE=25s",
	)
	p.mu.Unlock()
	return p.Restart()
}
