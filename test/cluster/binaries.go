/*
Copyright 2026 The tether Authors.
SPDX-License-Identifier: Apache-2.0
*/

package cluster

import (
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
)

// BinDir returns the folder holding the control-plane binaries: dir when
// given, else $KUBEBUILDER_ASSETS, else the folder hack/control-plane.sh
// prints (it builds the binaries into a cache on first use, which takes
// minutes once).
func BinDir(dir string) (string, error) {
	if dir == "" {
		dir = os.Getenv("KUBEBUILDER_ASSETS")
	}
	if dir == "" {
		root, err := RepoRoot()
		if err != nil {
			return "", err
		}
		cmd := exec.Command("bash", filepath.Join(root, "hack", "control-plane.sh"))
		cmd.Stderr = os.Stderr // build progress
		out, err := cmd.Output()
		if err != nil {
			return "", fmt.Errorf("hack/control-plane.sh: %w", err)
		}
		dir = strings.TrimSpace(string(out))
	}
	for _, b := range []string{"etcd", "kube-apiserver", "kube-controller-manager"} {
		if _, err := os.Stat(filepath.Join(dir, b)); err != nil {
			return "", fmt.Errorf("control-plane binary %s missing in %s (run hack/control-plane.sh): %w", b, dir, err)
		}
	}
	return dir, nil
}

// RepoRoot finds the repository root: the nearest folder above the working
// directory that holds hack/control-plane.sh.
func RepoRoot() (string, error) {
	dir, err := os.Getwd()
	if err != nil {
		return "", err
	}
	for {
		if _, err := os.Stat(filepath.Join(dir, "hack", "control-plane.sh")); err == nil {
			return dir, nil
		}
		parent := filepath.Dir(dir)
		if parent == dir {
			return "", errors.New("no hack/control-plane.sh above the working directory")
		}
		dir = parent
	}
}
