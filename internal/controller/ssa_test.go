/*
Copyright 2026 The tether Authors.
SPDX-License-Identifier: Apache-2.0
*/

package controller

import (
	"bufio"
	"bytes"
	"context"
	"errors"
	"io"
	"os"
	"path/filepath"
	"strings"
	"testing"

	. "github.com/onsi/gomega"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	utilyaml "k8s.io/apimachinery/pkg/util/yaml"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/yaml"

	"github.com/tether-dev/tether/api/v1alpha1"
)

// samples reads config/samples/tree.yaml as unstructured objects.
func samples(t *testing.T, ns string) []*unstructured.Unstructured {
	data, err := os.ReadFile(filepath.Join("..", "..", "config", "samples", "tree.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	var out []*unstructured.Unstructured
	docs := utilyaml.NewYAMLReader(bufio.NewReader(bytes.NewReader(data)))
	for {
		doc, err := docs.Read()
		if errors.Is(err, io.EOF) {
			return out
		}
		if err != nil {
			t.Fatal(err)
		}
		u := &unstructured.Unstructured{}
		if err := yaml.Unmarshal(doc, &u.Object); err != nil {
			t.Fatal(err)
		}
		if len(u.Object) == 0 {
			continue
		}
		u.SetNamespace(ns)
		out = append(out, u)
	}
}

// GitOps applies the same YAML again and again: the operator never writes
// spec, so a second server-side apply changes nothing.
func TestServerSideApplyTwiceYieldsNoDiff(t *testing.T) {
	e := setup(t)
	e.createAgent("worker", e.agent.URL())
	e.createAgent("orchestrator", e.agent.URL())
	apply := func() {
		for _, u := range samples(t, e.ns) {
			ac := client.ApplyConfigurationFromUnstructured(u)
			e.g.Expect(k8sClient.Apply(context.Background(), ac, client.FieldOwner("gitops"), client.ForceOwnership)).To(Succeed())
		}
	}
	apply()
	e.waitPhase("summarize", v1alpha1.PhaseSucceeded)
	before := map[string]*v1alpha1.Delegation{}
	for _, u := range samples(t, e.ns) {
		before[u.GetName()] = e.get(u.GetName())
	}

	apply()
	for name, b := range before {
		after := e.get(name)
		e.g.Expect(after.Generation).To(Equal(b.Generation), "%s: the second apply changed spec", name)
		e.g.Expect(after.Spec).To(Equal(b.Spec), name)
		for _, mf := range after.ManagedFields {
			if mf.Manager == "gitops" || mf.FieldsV1 == nil {
				continue
			}
			fields := mf.FieldsV1.GetRawString()
			e.g.Expect(strings.Contains(fields, `"f:spec"`)).To(BeFalse(), "%s: manager %q owns spec fields: %s", name, mf.Manager, fields)
		}
	}
}
