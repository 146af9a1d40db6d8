/*
Copyright 2026 The tether Authors.
SPDX-License-Identifier: Apache-2.0
*/

// Command testtimes reads `go test -json` on stdin and prints what a plain
// `go test` run would (a line per package, the output of failing tests and
// build errors), then where the time went: each package's duration, slowest
// first. It exits 1 when anything failed.
package main

import (
	"bufio"
	"cmp"
	"encoding/json"
	"fmt"
	"os"
	"slices"
	"strings"
)

// event is one line of `go test -json` (see `go doc test2json`).
type event struct {
	Action     string
	Package    string
	Test       string
	Output     string
	Elapsed    float64
	ImportPath string
}

// The actions of `go test -json` this reads.
const (
	actionPass = "pass"
	actionFail = "fail"
	actionSkip = "skip"
)

type pkgResult struct {
	name    string
	action  string
	elapsed float64
}

func main() {
	failed, results := read(bufio.NewScanner(os.Stdin))
	slices.SortFunc(results, func(a, b pkgResult) int { return cmp.Compare(b.elapsed, a.elapsed) })
	var total float64
	fmt.Println("\ntime per package (slowest first):")
	for _, r := range results {
		total += r.elapsed
		if r.elapsed >= 0.5 || r.action != actionPass {
			fmt.Printf("  %8.1fs  %-4s %s\n", r.elapsed, r.action, r.name)
		}
	}
	fmt.Printf("  %8.1fs  in all, %d packages (packages under 0.5s not listed)\n", total, len(results))
	if failed {
		os.Exit(1)
	}
}

// read prints the run as it goes and returns whether anything failed and
// each package's result.
func read(in *bufio.Scanner) (failed bool, results []pkgResult) {
	in.Buffer(make([]byte, 1<<20), 16<<20)
	// Output of each running test, printed only if it fails.
	pending := map[string]*strings.Builder{}
	for in.Scan() {
		var e event
		if err := json.Unmarshal(in.Bytes(), &e); err != nil {
			fmt.Println(in.Text()) // not an event: say it as it came
			continue
		}
		key := e.Package + " " + e.Test
		switch {
		case e.Action == "build-output":
			fmt.Print(e.Output)
		case e.Action == "build-fail":
			failed = true
		case e.Action == "output" && e.Test != "":
			b := pending[key]
			if b == nil {
				b = &strings.Builder{}
				pending[key] = b
			}
			b.WriteString(e.Output)
		case e.Action == "output":
			// Package lines: keep "ok", "FAIL", panics and the like; drop
			// the verbose run's own chatter.
			if !strings.HasPrefix(e.Output, "=== ") && !strings.HasPrefix(e.Output, "PASS") {
				fmt.Print(e.Output)
			}
		case e.Test != "" && (e.Action == actionPass || e.Action == actionSkip):
			delete(pending, key)
		case e.Test != "" && e.Action == actionFail:
			failed = true
			if b := pending[key]; b != nil {
				fmt.Print(b.String())
			}
			delete(pending, key)
		case e.Test == "" && (e.Action == actionPass || e.Action == actionFail): // skip: no test files
			failed = failed || e.Action == actionFail
			results = append(results, pkgResult{name: e.Package, action: e.Action, elapsed: e.Elapsed})
		}
	}
	if err := in.Err(); err != nil {
		fmt.Fprintln(os.Stderr, "testtimes:", err)
		failed = true
	}
	// A test still running when the stream ended (a timeout, a crash) says
	// what it printed.
	for key, b := range pending {
		fmt.Printf("--- %s did not finish:\n%s", key, b.String())
		failed = true
	}
	return failed, results
}
