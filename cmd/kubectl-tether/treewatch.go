/*
Copyright 2026 The tether Authors.
SPDX-License-Identifier: Apache-2.0
*/

package main

import (
	"context"
	"fmt"
	"io"
	"os"
	"strings"
	"sync"
	"time"

	"k8s.io/cli-runtime/pkg/printers"

	"github.com/tether-dev/tether/api/v1alpha1"
)

// Terminal control for redrawing in place: cursor home, erase to the end of
// the line, erase below.
const (
	cursorHome   = "\x1b[H"
	eraseLine    = "\x1b[K"
	eraseBelow   = "\x1b[J"
	redrawPeriod = time.Second // ages and lease times move on a terminal even without events
)

// watchTree follows the trees with wait's watch and exit codes (wait --tree
// for NAME, wait --all without), drawing them each time they change.
func watchTree(ctx context.Context, e *env, args []string) error {
	live := &liveTree{e: e, inPlace: printers.IsTerminal(e.stdout) && os.Getenv("TERM") != "dumb", clock: time.Now}
	w := waiter{e: e, tree: true, quiet: true, seen: live.update}
	if len(args) == 1 {
		live.name, w.name = args[0], args[0]
	}
	if live.inPlace {
		stop := make(chan struct{})
		defer close(stop)
		go live.tick(stop)
	}
	err := w.run(ctx)
	live.finish()
	return err
}

// liveTree draws the latest state the watch delivered: in place on a
// terminal (like watch(1) and argo watch), else one frame after another,
// each only when it differs from the one before.
type liveTree struct {
	e       *env
	name    string
	inPlace bool
	clock   func() time.Time

	mu    sync.Mutex
	items []v1alpha1.Delegation
	last  string
}

func (l *liveTree) update(items []v1alpha1.Delegation) {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.items = items
	l.draw(l.clock())
}

func (l *liveTree) tick(stop <-chan struct{}) {
	t := time.NewTicker(redrawPeriod)
	defer t.Stop()
	for {
		select {
		case <-stop:
			return
		case now := <-t.C:
			l.mu.Lock()
			if l.items != nil {
				l.draw(now)
			}
			l.mu.Unlock()
		}
	}
}

// finish leaves the cursor below the last frame, so the shell prompt and an
// error message follow it.
func (l *liveTree) finish() {
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.inPlace && l.last != "" {
		_, _ = io.WriteString(l.e.stdout, eraseBelow)
	}
}

// draw must be called with mu held.
func (l *liveTree) draw(now time.Time) {
	frame := l.frame(now)
	if frame == "" || frame == l.last {
		return
	}
	first := l.last == ""
	l.last = frame
	if l.inPlace {
		if first {
			// Start on a clean screen; later frames overwrite it line by line.
			_, _ = io.WriteString(l.e.stdout, cursorHome+eraseBelow)
		}
		_, _ = io.WriteString(l.e.stdout, cursorHome+strings.ReplaceAll(frame, "\n", eraseLine+"\n")+eraseBelow)
		return
	}
	if !first {
		frame = "\n" + frame
	}
	_, _ = io.WriteString(l.e.stdout, frame)
}

// frame is the tree as tree prints it, under a line that says what is
// followed and when it was drawn; "" when there is nothing to draw.
func (l *liveTree) frame(now time.Time) string {
	what := "every tree " + l.e.where()
	if l.name != "" {
		what = fmt.Sprintf("tree %q", l.name)
	}
	header := fmt.Sprintf("Watching %s; %s\n", what, now.UTC().Format(time.TimeOnly))
	if !l.inPlace {
		header = fmt.Sprintf("Watching %s\n", what)
	}
	tops, children, err := l.e.trees(l.items, l.name)
	switch {
	case err != nil:
		return "" // the watch reports it (not found) and ends
	case len(tops) == 0:
		return header + fmt.Sprintf("No Delegations %s.\n", l.e.where())
	}
	v := l.e.treeView()
	v.now = now
	return header + v.render(tops, children)
}
