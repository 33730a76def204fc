package plugin

import (
	"context"
	"crypto/subtle"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"strconv"
	"sync"
	"time"

	"github.com/hashicorp/go-hclog"
	goplugin "github.com/hashicorp/go-plugin"
	"github.com/hashicorp/go-plugin/runner"
)

// pipeGrace bounds how long the host reads a plugin's stdout and stderr
// after the plugin exited. A grandchild that inherited them (a plugin
// that forked) would otherwise keep them open, and go-plugin, which
// waits for both to reach EOF before it reaps the process, would never
// report the exit nor return from Kill.
const pipeGrace = 500 * time.Millisecond

// procRunner starts a plugin as go-plugin's runner.Runner does, with
// what go-plugin's own command runner lacks:
//
//   - the plugin leads a process group of its own, and every process in
//     it (grandchildren too) is killed with SIGKILL when the plugin exits
//     or is killed;
//   - on Linux the plugin gets SIGTERM when the host dies, however it
//     died, SIGKILL included (PR_SET_PDEATHSIG): the plugin side (Serve)
//     then kills its group;
//   - the host owns the read ends of the plugin's stdout and stderr, and
//     stops reading them pipeGrace after the plugin exited, so a
//     grandchild holding them cannot hang the host;
//   - the exit is known as soon as it happens (exited), not after the
//     pipes drain.
//
// It re-checks the binary's checksum just before it starts it, as
// go-plugin's SecureConfig does for a Cmd (a RunnerFunc gets none), but
// bounded as fileSum is: SecureConfig.Check opens whatever path is (a
// FIFO blocks it) and hashes all of it (/dev/zero never ends).
type procRunner struct {
	path string
	sum  []byte

	cmd            *exec.Cmd
	pid            int
	stdout, stderr *drainPipe
	exitCh         chan struct{} // closed when the process exited (not yet reaped)
	reapCh         chan struct{} // closed when it is reaped; waitErr is set
	waitErr        error
	killOnce       sync.Once
}

func newProcRunner(path string, sum []byte) *procRunner {
	return &procRunner{path: path, sum: sum,
		exitCh: make(chan struct{}), reapCh: make(chan struct{})}
}

// runnerFunc is the ClientConfig.RunnerFunc: tmpl carries go-plugin's
// environment (handshake cookie, AutoMTLS certificate, socket dir).
func (r *procRunner) runnerFunc(_ hclog.Logger, tmpl *exec.Cmd, _ string) (runner.Runner, error) {
	if len(r.sum) == 0 {
		return nil, fmt.Errorf("error verifying checksum: %s", goplugin.ErrSecureConfigNoChecksum)
	}
	sum, err := fileSum(r.path)
	if err != nil {
		return nil, fmt.Errorf("error verifying checksum: %s", err)
	}
	if subtle.ConstantTimeCompare(sum, r.sum) != 1 {
		return nil, goplugin.ErrChecksumsDoNotMatch
	}
	r.cmd = exec.Command(r.path)
	r.cmd.Env = tmpl.Env
	// No stdin (go-plugin passes the host's): in a process group of its
	// own, a plugin reading the terminal would be stopped by SIGTTIN.
	r.cmd.SysProcAttr = pluginProcAttr()
	return r, nil
}

func (r *procRunner) Start(context.Context) error {
	outR, outW, err := os.Pipe()
	if err != nil {
		return err
	}
	errR, errW, err := os.Pipe()
	if err != nil {
		outR.Close()
		outW.Close()
		return err
	}
	r.cmd.Stdout, r.cmd.Stderr = outW, errW
	err = startPlugin(r.cmd)
	outW.Close() // the child has its copies
	errW.Close()
	if err != nil {
		outR.Close()
		errR.Close()
		return err
	}
	r.pid = r.cmd.Process.Pid
	r.stdout, r.stderr = newDrainPipe(outR), newDrainPipe(errR)
	go r.wait()
	return nil
}

// wait notices the exit, kills what is left of the group, reaps the
// plugin, and cuts the pipes off if they are still open after
// pipeGrace.
func (r *procRunner) wait() {
	reaped := waitExit(r)
	close(r.exitCh)
	killGroup(r.pid)
	if !reaped {
		r.waitErr = r.cmd.Wait() // returns at once: stdout and stderr are files, no copying
	}
	close(r.reapCh)
	t := time.NewTimer(pipeGrace)
	defer t.Stop()
	for _, p := range []*drainPipe{r.stdout, r.stderr} {
		select {
		case <-p.eof:
		case <-t.C:
			r.stdout.cut()
			r.stderr.cut()
			return
		}
	}
}

// exited reports whether the plugin process has exited.
func (r *procRunner) exited() bool { return r.exitedWithin(0) }

// exitedWithin reports whether the plugin process exits within d (it
// may still be exiting when go-plugin has seen its stdout close).
func (r *procRunner) exitedWithin(d time.Duration) bool {
	if d <= 0 {
		select {
		case <-r.exitCh:
			return true
		default:
			return false
		}
	}
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-r.exitCh:
		return true
	case <-t.C:
		return false
	}
}

// drained waits until the plugin's stderr is read to its end (or cut
// off), so its last lines (a crash's panic) are in.
func (r *procRunner) drained() {
	select {
	case <-r.stderr.eof:
	case <-time.After(pipeGrace + 100*time.Millisecond):
	}
}

// status is how the plugin exited ("exit status 4", "signal: killed").
func (r *procRunner) status() string {
	select {
	case <-r.reapCh:
	case <-time.After(pipeGrace):
		return "still running"
	}
	if r.waitErr == nil {
		return "exit status 0"
	}
	return r.waitErr.Error()
}

func (r *procRunner) Wait(context.Context) error {
	<-r.reapCh
	return r.waitErr
}

// Kill kills the plugin's whole process group.
func (r *procRunner) Kill(context.Context) error {
	if r.cmd == nil || r.cmd.Process == nil {
		return nil
	}
	r.killOnce.Do(func() {
		select {
		case <-r.reapCh: // gone; its group id may belong to someone else now
		default:
			killGroup(r.pid)
		}
	})
	if err := r.cmd.Process.Kill(); err != nil && !errors.Is(err, os.ErrProcessDone) {
		return err
	}
	return nil
}

func (r *procRunner) Stdout() io.ReadCloser           { return r.stdout }
func (r *procRunner) Stderr() io.ReadCloser           { return r.stderr }
func (r *procRunner) Name() string                    { return r.path }
func (r *procRunner) ID() string                      { return strconv.Itoa(r.pid) }
func (r *procRunner) Diagnose(context.Context) string { return "" }

func (r *procRunner) PluginToHost(n, a string) (string, string, error) { return n, a, nil }
func (r *procRunner) HostToPlugin(n, a string) (string, string, error) { return n, a, nil }

// drainPipe is the host's read end of a plugin's stdout or stderr. Once
// cut, a read reports EOF instead of the closed file.
type drainPipe struct {
	f       *os.File
	eof     chan struct{}
	eofOnce sync.Once
	mu      sync.Mutex
	isCut   bool
}

func newDrainPipe(f *os.File) *drainPipe { return &drainPipe{f: f, eof: make(chan struct{})} }

func (p *drainPipe) Read(b []byte) (int, error) {
	n, err := p.f.Read(b)
	if err != nil {
		p.eofOnce.Do(func() { close(p.eof) })
		p.mu.Lock()
		cut := p.isCut
		p.mu.Unlock()
		if cut {
			err = io.EOF
		}
	}
	return n, err
}

// cut closes the pipe: a blocked Read returns (EOF).
func (p *drainPipe) cut() {
	p.mu.Lock()
	p.isCut = true
	p.mu.Unlock()
	p.f.Close()
}

func (p *drainPipe) Close() error { p.cut(); return nil }
