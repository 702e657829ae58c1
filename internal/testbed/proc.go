package testbed

import (
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"sync"
	"syscall"
	"time"
)

// Proc is a program the test bed runs: a controller, or a test's own (the Fleet agent, the
// system-upgrade-controller). Its output goes to <Dir>/<name>.log, appended across restarts.
type Proc struct {
	Name    string
	LogPath string

	bin  string
	args []string
	env  []string

	mu   sync.Mutex
	cmd  *exec.Cmd
	done chan struct{}
	err  error
}

// Run starts bin with args (and env added to this process's environment) and stops it when
// the test ends. A program that exits on its own is not restarted; Restart does that.
func (b *Bed) Run(t T, name, bin string, args, env []string) *Proc {
	t.Helper()
	p, err := b.Spawn(name, bin, args, env)
	if err != nil {
		t.Fatalf("testbed: %v", err)
	}
	t.Cleanup(func() { _ = p.Stop() })
	return p
}

// Spawn is Run outside a test: Close stops the program.
func (b *Bed) Spawn(name, bin string, args, env []string) (*Proc, error) {
	p := &Proc{Name: name, LogPath: filepath.Join(b.Dir, name+".log"), bin: bin, args: args, env: env}
	if err := p.start(); err != nil {
		return nil, fmt.Errorf("starting %s: %w", name, err)
	}
	b.mu.Lock()
	b.procs = append(b.procs, p)
	b.mu.Unlock()
	return p, nil
}

func (p *Proc) start() error {
	f, err := os.OpenFile(p.LogPath, os.O_CREATE|os.O_WRONLY|os.O_APPEND, 0o600)
	if err != nil {
		return err
	}
	fmt.Fprintf(f, "=== %s: starting %s\n", time.Now().UTC().Format(time.RFC3339Nano), p.Name)
	cmd := exec.Command(p.bin, p.args...)
	cmd.Env = append(os.Environ(), p.env...)
	cmd.Stdout, cmd.Stderr = f, f
	cmd.SysProcAttr = childAttr()
	if err := cmd.Start(); err != nil {
		f.Close()
		return err
	}
	done := make(chan struct{})
	p.mu.Lock()
	p.cmd, p.done, p.err = cmd, done, nil
	p.mu.Unlock()
	go func() {
		err := cmd.Wait()
		f.Close()
		p.mu.Lock()
		p.err = err
		p.mu.Unlock()
		close(done)
	}()
	return nil
}

// Kill ends the program at once with SIGKILL, as a node or pod dying would, and waits for it.
func (p *Proc) Kill() error { return p.signal(syscall.SIGKILL) }

// Stop ends the program with SIGTERM, then SIGKILL after ten seconds.
func (p *Proc) Stop() error { return p.signal(syscall.SIGTERM) }

func (p *Proc) signal(sig syscall.Signal) error {
	p.mu.Lock()
	cmd, done := p.cmd, p.done
	p.mu.Unlock()
	if cmd == nil {
		return nil
	}
	select {
	case <-done:
		return nil
	default:
	}
	_ = cmd.Process.Signal(sig)
	select {
	case <-done:
	case <-time.After(10 * time.Second):
		_ = cmd.Process.Kill()
		<-done
	}
	return nil
}

// Restart starts the program again after Kill or Stop (or after it exited).
func (p *Proc) Restart() error {
	if err := p.Stop(); err != nil {
		return err
	}
	return p.start()
}

// Exited reports whether the program has ended, and how.
func (p *Proc) Exited() (bool, error) {
	p.mu.Lock()
	defer p.mu.Unlock()
	select {
	case <-p.done:
		return true, p.err
	default:
		return false, nil
	}
}

// Log returns everything the program has written so far.
func (p *Proc) Log() string {
	data, err := os.ReadFile(p.LogPath)
	if err != nil {
		return fmt.Sprintf("(no log: %v)", err)
	}
	return string(data)
}
