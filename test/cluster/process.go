/*
Copyright 2026 The tether Authors.
SPDX-License-Identifier: Apache-2.0
*/

package cluster

import (
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"regexp"
	"strings"
	"sync"
	"syscall"
	"time"
)

// ProcessOptions says how to run one binary next to the control plane.
type ProcessOptions struct {
	// Name labels errors and progress lines.
	Name string
	// Path is the binary; Args its arguments.
	Path string
	Args []string
	// Env is added to the current environment.
	Env []string
	// LogPath receives stdout and stderr together.
	LogPath string
}

// Process is a binary started by StartProcess. Its output goes to a file, so
// a test can search it (WaitFor, Log) while it runs and show it on failure.
type Process struct {
	name    string
	cmd     *exec.Cmd
	logPath string
	logFile *os.File
	done    chan struct{}
	waitErr error
	stop    sync.Once
}

// StartProcess starts a binary. It is not tied to a context: it runs until
// Stop, so a short start-up deadline cannot kill it by accident.
func StartProcess(o ProcessOptions) (*Process, error) {
	f, err := os.Create(o.LogPath)
	if err != nil {
		return nil, err
	}
	cmd := exec.Command(o.Path, o.Args...)
	cmd.Env = append(os.Environ(), o.Env...)
	cmd.Stdout, cmd.Stderr = f, f
	cmd.SysProcAttr = sysProcAttr()
	if err := cmd.Start(); err != nil {
		_ = f.Close()
		return nil, fmt.Errorf("starting %s: %w", o.Name, err)
	}
	p := &Process{name: o.Name, cmd: cmd, logPath: o.LogPath, logFile: f, done: make(chan struct{})}
	go func() {
		p.waitErr = cmd.Wait()
		_ = f.Close()
		close(p.done)
	}()
	return p, nil
}

// Name is the name the process was started with.
func (p *Process) Name() string { return p.name }

// Pid is the operating system's id of the process, e.g. to read its
// resource use from /proc.
func (p *Process) Pid() int { return p.cmd.Process.Pid }

// LogPath is the file holding the process's output.
func (p *Process) LogPath() string { return p.logPath }

// Log returns everything the process printed so far.
func (p *Process) Log() string {
	b, _ := os.ReadFile(p.logPath)
	return string(b)
}

// Done is closed when the process has ended.
func (p *Process) Done() <-chan struct{} { return p.done }

// Exited reports whether the process has ended.
func (p *Process) Exited() bool {
	select {
	case <-p.done:
		return true
	default:
		return false
	}
}

// WaitFor waits until the output matches re and returns the submatches. It
// fails early when the process exits, with the end of its output.
func (p *Process) WaitFor(ctx context.Context, re *regexp.Regexp) ([]string, error) {
	tick := time.NewTicker(50 * time.Millisecond)
	defer tick.Stop()
	for {
		if m := re.FindStringSubmatch(p.Log()); m != nil {
			return m, nil
		}
		select {
		case <-p.done:
			if m := re.FindStringSubmatch(p.Log()); m != nil {
				return m, nil
			}
			return nil, fmt.Errorf("%s exited (%v) before printing %q:\n%s", p.name, p.waitErr, re, Tail(p.Log(), 40))
		case <-ctx.Done():
			return nil, fmt.Errorf("%s did not print %q: %w:\n%s", p.name, re, ctx.Err(), Tail(p.Log(), 40))
		case <-tick.C:
		}
	}
}

// Stop sends SIGTERM, so the process can shut down cleanly (an operator
// releases its leader Lease), and SIGKILL after grace. Safe to call twice.
func (p *Process) Stop(grace time.Duration) error {
	var err error
	p.stop.Do(func() {
		if p.Exited() {
			return
		}
		_ = p.cmd.Process.Signal(syscall.SIGTERM)
		select {
		case <-p.done:
		case <-time.After(grace):
			_ = p.cmd.Process.Kill()
			<-p.done
			err = fmt.Errorf("%s did not stop within %s and was killed", p.name, grace)
		}
	})
	var exitErr *exec.ExitError
	if err == nil && p.waitErr != nil && !errors.As(p.waitErr, &exitErr) {
		err = p.waitErr
	}
	return err
}

// Kill sends SIGKILL, as when the process's node dies: nothing is
// released. It returns once the process has ended.
func (p *Process) Kill() {
	p.stop.Do(func() {
		if !p.Exited() {
			_ = p.cmd.Process.Kill()
		}
		<-p.done
	})
}

// Tail returns the last n lines of s.
func Tail(s string, n int) string {
	lines := strings.Split(strings.TrimRight(s, "\n"), "\n")
	if len(lines) > n {
		lines = lines[len(lines)-n:]
	}
	return strings.Join(lines, "\n")
}
