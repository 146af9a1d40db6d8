/*
Copyright 2026 The tether Authors.
SPDX-License-Identifier: Apache-2.0
*/

// Package version holds the version, commit and build date stamped into the
// operator and the kubectl plugin at link time:
//
//	go build -ldflags "-X github.com/tether-dev/tether/internal/version.version=v0.1.0 \
//	  -X github.com/tether-dev/tether/internal/version.commit=$(git rev-parse HEAD) \
//	  -X github.com/tether-dev/tether/internal/version.date=$(date -u +%Y-%m-%dT%H:%M:%SZ)"
//
// A binary built without them (go build, go install) reports what the Go
// toolchain recorded: the module version and VCS revision, when there are any.
package version

import (
	"fmt"
	"runtime"
	"runtime/debug"
)

// Set with -ldflags -X; see the package comment.
var (
	version = ""
	commit  = ""
	date    = ""
)

// Info is what a binary knows about its build.
type Info struct {
	Version   string `json:"version"`
	Commit    string `json:"commit"`
	Date      string `json:"date"`
	GoVersion string `json:"goVersion"`
	Platform  string `json:"platform"`
}

// Get returns the stamped build information, filled from the Go toolchain's
// build record where nothing was stamped.
func Get() Info {
	return resolve(version, commit, date, readBuildInfo)
}

func readBuildInfo() (*debug.BuildInfo, bool) { return debug.ReadBuildInfo() }

func resolve(v, c, d string, read func() (*debug.BuildInfo, bool)) Info {
	if bi, ok := read(); ok {
		if v == "" && bi.Main.Version != "" && bi.Main.Version != "(devel)" {
			v = bi.Main.Version
		}
		for _, s := range bi.Settings {
			switch {
			case s.Key == "vcs.revision" && c == "":
				c = s.Value
			case s.Key == "vcs.time" && d == "":
				d = s.Value
			}
		}
	}
	return Info{
		Version:   orUnknown(v, "dev"),
		Commit:    orUnknown(c, "unknown"),
		Date:      orUnknown(d, "unknown"),
		GoVersion: runtime.Version(),
		Platform:  runtime.GOOS + "/" + runtime.GOARCH,
	}
}

func orUnknown(s, fallback string) string {
	if s == "" {
		return fallback
	}
	return s
}

// String is the one-line form printed at start and by `kubectl tether version`.
func (i Info) String() string {
	return fmt.Sprintf("%s (commit %s, built %s, %s, %s)", i.Version, i.Commit, i.Date, i.GoVersion, i.Platform)
}
