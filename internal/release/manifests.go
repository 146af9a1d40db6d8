/*
Copyright 2026 The tether Authors.
SPDX-License-Identifier: Apache-2.0
*/

// Package release renders the plain manifests a release ships beside the
// chart: install.yaml (config/default, the operator's image pinned by tag
// and digest) and tether-crds.yaml (config/crd), the way cert-manager and
// Kueue publish theirs.
package release

import (
	"fmt"
	"os"
	"path/filepath"
	"regexp"

	"sigs.k8s.io/kustomize/api/krusty"
	"sigs.k8s.io/kustomize/api/types"
	"sigs.k8s.io/kustomize/kyaml/filesys"
	"sigs.k8s.io/yaml"
)

// OperatorImage is the image name config/manager uses; the release
// replaces its tag (and digest).
const OperatorImage = "ghcr.io/tether-dev/tether"

// Image pins the operator's image.
type Image struct {
	// Name defaults to OperatorImage (a fork or mirror sets its own).
	Name string
	// Tag is the release's version, e.g. 0.2.0.
	Tag string
	// Digest, sha256:..., of the image's manifest list; empty only in a
	// snapshot, where no image was pushed.
	Digest string
}

var digestPattern = regexp.MustCompile(`^sha256:[0-9a-f]{64}$`)

// Manifests are the rendered files.
type Manifests struct {
	Install []byte // install.yaml
	CRDs    []byte // tether-crds.yaml
}

// Render builds config/default and config/crd of the repository at root.
func Render(root string, img Image) (Manifests, error) {
	if img.Tag == "" {
		return Manifests{}, fmt.Errorf("the image needs a tag")
	}
	if img.Digest != "" && !digestPattern.MatchString(img.Digest) {
		return Manifests{}, fmt.Errorf("image digest %q is not sha256:<64 hex digits>", img.Digest)
	}
	if img.Name == "" {
		img.Name = OperatorImage
	}
	abs, err := filepath.Abs(root)
	if err != nil {
		return Manifests{}, err
	}
	// An overlay outside the repository sets the image; config/default
	// stays what `kubectl apply -k` installs.
	overlay, err := os.MkdirTemp("", "tether-release-")
	if err != nil {
		return Manifests{}, err
	}
	defer func() { _ = os.RemoveAll(overlay) }()
	base, err := filepath.Rel(overlay, filepath.Join(abs, "config", "default"))
	if err != nil {
		return Manifests{}, err
	}
	k := types.Kustomization{
		TypeMeta:  types.TypeMeta{APIVersion: types.KustomizationVersion, Kind: types.KustomizationKind},
		Resources: []string{base},
		Images:    []types.Image{{Name: OperatorImage, NewName: img.Name, NewTag: img.Tag, Digest: img.Digest}},
	}
	raw, err := yaml.Marshal(k)
	if err != nil {
		return Manifests{}, err
	}
	if err := os.WriteFile(filepath.Join(overlay, "kustomization.yaml"), raw, 0o600); err != nil {
		return Manifests{}, err
	}
	install, err := build(overlay)
	if err != nil {
		return Manifests{}, fmt.Errorf("config/default: %w", err)
	}
	crds, err := build(filepath.Join(abs, "config", "crd"))
	if err != nil {
		return Manifests{}, fmt.Errorf("config/crd: %w", err)
	}
	return Manifests{Install: install, CRDs: crds}, nil
}

// Build renders one kustomization directory, as `kubectl kustomize` does.
func Build(dir string) ([]byte, error) { return build(dir) }

func build(dir string) ([]byte, error) {
	opts := krusty.MakeDefaultOptions()
	// The overlay lives outside the repository and names it by path.
	opts.LoadRestrictions = types.LoadRestrictionsNone
	m, err := krusty.MakeKustomizer(opts).Run(filesys.MakeFsOnDisk(), dir)
	if err != nil {
		return nil, err
	}
	return m.AsYaml()
}
