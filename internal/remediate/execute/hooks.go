package execute

import (
	"context"
	"errors"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"

	"github.com/unstick-dev/unstick/internal/remediate"
)

// Phases of a step, in order. A step's journal has one line per phase it completed.
const (
	PhaseBegin      = "begin"      // about to start: the step as planned
	PhaseBackup     = "backup"     // objects, events and logs saved; preconditions held
	PhaseDryRun     = "dry-run"    // the server accepted the writes with dryRun=All
	PhaseWrite      = "write"      // one object written (a line per write, as it happens)
	PhaseApplied    = "applied"    // the writes were made
	PhaseVerified   = "verified"   // terminal: the state moved
	PhaseUnverified = "unverified" // terminal: written, but the state did not move in time
	PhaseDeclined   = "declined"   // terminal for this run: the operator said no
	PhaseConflict   = "conflict"   // an object changed since planning: no write was made
	PhaseFailed     = "failed"     // the step failed; see the message
	PhaseAbandoned  = "abandoned"  // terminal: begun in an earlier run, not applied, no longer planned
	PhaseProgress   = "progress"   // a storage migration finished a page (continue token, count)

	// PhaseInterrupted: the step's writes stopped part-way (some were made) or a write's
	// answer was lost, so what the server holds is not known here; the next run finishes the
	// step from the journal, as after a kill.
	PhaseInterrupted = "interrupted"
)

// Hooks let tests inject what a real API server cannot produce on demand: a change made by
// someone else between the dry-run and the write, or the process dying at a step boundary.
// Production code never sets them.
type Hooks struct {
	// AfterPhase runs after a step completed phase (and its journal line was written). An
	// error stops the run at once, as a killed process would: no further journal line, no
	// further write. ErrKilled is the conventional one.
	AfterPhase func(ctx context.Context, step remediate.Step, phase string) error
	// BeforeApply runs after the dry-run and before the write.
	BeforeApply func(ctx context.Context, step remediate.Step) error
	// AfterWrite runs after each object a step writes (a Helm rollback writes several); an
	// error stops the run there, mid-step, as a process killed between two writes would.
	AfterWrite func(ctx context.Context, step remediate.Step, w Write) error
	// BeforeMigrateObject runs in a storage migration after an object was listed and before
	// it is written back: a test makes a concurrent writer's update land exactly there.
	BeforeMigrateObject func(ctx context.Context, step remediate.Step, obj *unstructured.Unstructured) error
}

// ErrKilled is what a test hook returns to simulate the process being killed.
var ErrKilled = errors.New("killed (test hook)")

type hooksKey struct{}

// WithHooks returns a context carrying test hooks for the executor (tests call the CLI with
// it; see internal/e2e/fix_test.go).
func WithHooks(ctx context.Context, h *Hooks) context.Context {
	return context.WithValue(ctx, hooksKey{}, h)
}

func hooksFrom(ctx context.Context) *Hooks {
	h, _ := ctx.Value(hooksKey{}).(*Hooks)
	if h == nil {
		return &Hooks{}
	}
	return h
}
