package serve

import (
	"context"
	"fmt"
	"time"

	"github.com/unstick-dev/unstick/internal/finding"
	"github.com/unstick-dev/unstick/internal/source"
)

// syncGrace is how long a cluster added while serve runs may fill its caches unseen; after
// that it is reported, with an error saying its caches are not complete, rather than left
// out of the report as if it were not there.
const syncGrace = time.Minute

// member is one watched cluster: its watch, the context that stops it, and where it stands.
type member struct {
	key    string
	t      source.Target
	w      *clusterWatch
	cancel context.CancelFunc
	// failed is why its watch could not start; it is retried at the next refresh, and
	// retrying says a retry is under way.
	failed   *finding.ScanError
	retrying bool
	// synced: every cache has listed once; only then are its objects judged (a half-filled
	// cache would report a missing CRD or an absent agent that is there).
	synced bool
	added  time.Time
}

// targetKey identifies a target across refreshes: a cluster renamed, or now reached through
// another context, is a new target (its report name and printed commands change with it).
func targetKey(t source.Target) string {
	return t.Server + "\x00" + t.Name + "\x00" + t.Context + "\x00" + t.ContextServer
}

// describe names a target in the lines about list changes: "cluster c-m-abc12 (prod-eu-3)".
func describe(t source.Target) string {
	_, id := source.SplitRancherServer(t.Server)
	switch {
	case id == "":
		return "cluster " + t.Name
	case id == t.Name:
		return "cluster " + id
	}
	return "cluster " + id + " (" + t.Name + ")"
}

// startMember starts watching a member's cluster until ctx ends or the member is removed;
// when that fails, m.failed says why.
func (s *Server) startMember(ctx context.Context, m *member) error {
	mctx, cancel := context.WithCancel(ctx)
	s.wmu.Lock()
	m.cancel = cancel
	s.wmu.Unlock()
	err := m.w.start(mctx)
	if err != nil {
		cancel()
		s.wmu.Lock()
		m.failed, m.retrying = &finding.ScanError{Cluster: m.t.Name, Message: err.Error()}, false
		s.wmu.Unlock()
	}
	return err
}

func (s *Server) newMember(t source.Target) (*member, error) {
	w, err := newClusterWatch(t, s.o.Resync, s.o.PollInterval, logReading{limit: s.o.LogReads, lines: s.o.LogLines}, s.poke)
	if err != nil {
		return nil, err
	}
	return &member{key: targetKey(t), t: t, w: w, added: time.Now()}, nil
}

// currentMembers is a copy of the member list.
func (s *Server) currentMembers() []*member {
	s.wmu.Lock()
	defer s.wmu.Unlock()
	return append([]*member(nil), s.members...)
}

// refreshLoop lists the clusters again every Refresh until ctx ends.
func (s *Server) refreshLoop(ctx context.Context) {
	tick := time.NewTicker(s.o.Refresh)
	defer tick.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case <-tick.C:
			s.refresh(ctx)
		}
	}
}

// refresh lists the clusters once and follows the list: new clusters are watched, removed
// ones stop being watched (their series go with the next evaluation), clusters whose watch
// could not start are tried again. A failed list changes nothing but the report: the last
// list stays watched, since a Rancher that does not answer says nothing about its clusters.
func (s *Server) refresh(ctx context.Context) {
	ts, err := s.o.Rediscover(ctx)
	if err == nil && len(ts) == 0 {
		err = fmt.Errorf("the list came back empty")
	}
	if ctx.Err() != nil {
		return
	}
	if err != nil {
		s.listFailed(err)
		s.poke()
		return
	}
	s.wmu.Lock()
	if s.listErr != nil {
		s.notify(fmt.Sprintf("rancher: the cluster list answers again (%d clusters)", len(ts)))
		s.listErr, s.listFailedSince = nil, time.Time{}
	}
	s.fleet = newFleetMap(s.o.Shard, ts)
	ts = s.fleet.watch(ts)
	want := map[string]source.Target{}
	for _, t := range ts {
		want[targetKey(t)] = t
	}
	var keep, started, retried []*member
	have := map[string]bool{}
	for _, m := range s.members {
		if _, ok := want[m.key]; !ok {
			if m.cancel != nil {
				m.cancel()
			}
			s.notify(fmt.Sprintf("rancher: %s removed; stopped watching it and dropped its series", describe(m.t)))
			continue
		}
		have[m.key] = true
		if m.failed != nil && !m.retrying {
			// A watch that could not start is started afresh (its informers may be
			// half-started, its discovery stale); it stays reported as failed until the
			// new one has synced, so a cluster that stays down does not flicker.
			nm, err := s.newMember(m.t)
			if err == nil {
				nm.failed, nm.added, nm.retrying = m.failed, m.added, true
				m = nm
				retried = append(retried, nm)
			}
		}
		keep = append(keep, m)
	}
	for _, t := range ts {
		k := targetKey(t)
		if have[k] {
			continue
		}
		have[k] = true
		m, err := s.newMember(t)
		if err != nil {
			s.o.Log.Error("rancher: cannot watch", "cluster", t.Name, "err", err)
			continue
		}
		keep = append(keep, m)
		started = append(started, m)
	}
	s.members = keep
	s.wmu.Unlock()

	for _, m := range started {
		s.notify(fmt.Sprintf("rancher: %s added; watching it", describe(m.t)))
		go s.follow(ctx, m, false)
	}
	for _, m := range retried {
		go s.follow(ctx, m, true)
	}
	s.poke()
}

// follow starts a member's watch and marks it synced once every cache has listed.
func (s *Server) follow(ctx context.Context, m *member, retry bool) {
	if err := s.startMember(ctx, m); err != nil {
		if !retry {
			s.notify(fmt.Sprintf("rancher: %s cannot be watched yet (tried again at each refresh): %v", describe(m.t), err))
		}
		s.poke()
		return
	}
	for !m.w.synced() && s.isMember(m) {
		select {
		case <-ctx.Done():
			return
		case <-time.After(50 * time.Millisecond):
		}
	}
	s.wmu.Lock()
	if !s.isMemberLocked(m) { // removed before its watch had synced: the removal may have come before there was a watch to stop
		m.cancel()
		s.wmu.Unlock()
		return
	}
	m.synced, m.failed, m.retrying = true, nil, false
	s.wmu.Unlock()
	if retry {
		s.notify(fmt.Sprintf("rancher: %s can be watched now", describe(m.t)))
	}
	s.poke()
}

func (s *Server) isMember(m *member) bool {
	s.wmu.Lock()
	defer s.wmu.Unlock()
	return s.isMemberLocked(m)
}

func (s *Server) isMemberLocked(m *member) bool {
	for _, x := range s.members {
		if x == m {
			return true
		}
	}
	return false
}

// listFailed records a failed list; the log says so when the failure starts or changes.
func (s *Server) listFailed(err error) {
	s.wmu.Lock()
	defer s.wmu.Unlock()
	now := time.Now()
	if s.listErr == nil {
		s.listFailedSince = now
	}
	msg := fmt.Sprintf("listing Rancher's clusters has failed since %s: %v; still watching the %d clusters of the last list", s.listFailedSince.UTC().Format(time.RFC3339), err, len(s.members))
	if s.listErr == nil || s.listErr.Message != msg {
		s.o.Log.Warn("rancher: " + msg)
	}
	s.listErr = &finding.ScanError{Message: msg}
}

// notify reports one change of the watched clusters.
func (s *Server) notify(line string) {
	if s.o.Notify != nil {
		s.o.Notify(line)
		return
	}
	s.o.Log.Info(line)
}
