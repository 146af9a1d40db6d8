/*
Copyright 2026 The tether Authors.
SPDX-License-Identifier: Apache-2.0
*/

// Command manifests writes a release's install.yaml and tether-crds.yaml:
//
//	go run ./hack/release/manifests --tag 0.2.0 --digest sha256:... --out dist
//
// The release runs it from the operator image's post hook, which knows the
// pushed manifest list's digest; a snapshot runs it without a digest.
package main

import (
	"flag"
	"fmt"
	"os"
	"path/filepath"

	"github.com/tether-dev/tether/internal/release"
)

func main() {
	var img release.Image
	root := flag.String("root", ".", "the repository")
	out := flag.String("out", "dist", "folder to write install.yaml and tether-crds.yaml to")
	flag.StringVar(&img.Name, "image", release.OperatorImage, "the operator's image name")
	flag.StringVar(&img.Tag, "tag", "", "the image tag (the release version, without v)")
	flag.StringVar(&img.Digest, "digest", "", "the image's manifest list digest, sha256:...")
	flag.Parse()
	if err := write(*root, *out, img); err != nil {
		fmt.Fprintln(os.Stderr, "manifests:", err)
		os.Exit(1)
	}
}

func write(root, out string, img release.Image) error {
	m, err := release.Render(root, img)
	if err != nil {
		return err
	}
	if err := os.MkdirAll(out, 0o755); err != nil {
		return err
	}
	for name, data := range map[string][]byte{"install.yaml": m.Install, "tether-crds.yaml": m.CRDs} {
		if err := os.WriteFile(filepath.Join(out, name), data, 0o644); err != nil {
			return err
		}
		fmt.Printf("manifests: wrote %s\n", filepath.Join(out, name))
	}
	return nil
}
