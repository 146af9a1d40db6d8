/*
Copyright 2026 The tether Authors.
SPDX-License-Identifier: Apache-2.0
*/

package main

import (
	"github.com/spf13/cobra"
	corev1 "k8s.io/api/core/v1"
	apimeta "k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/tether-dev/tether/api/v1alpha1"
)

// completeDelegations completes the first argument with the names of the
// Delegations in the namespace the flags point at. `completion bash|zsh|fish`
// comes from cobra; kubectl completes `kubectl tether ...` through the
// kubectl_complete-tether script shipped next to the binary.
func completeDelegations(o *options) cobra.CompletionFunc {
	return completeNames(o, func() client.ObjectList { return &v1alpha1.DelegationList{} })
}

// completeAgents completes the first argument with the Agents of the namespace.
func completeAgents(o *options) cobra.CompletionFunc {
	return completeNames(o, func() client.ObjectList { return &v1alpha1.AgentList{} })
}

// completeNames completes the first argument with the names of the objects
// newList lists in the namespace the flags point at.
func completeNames(o *options, newList func() client.ObjectList) cobra.CompletionFunc {
	return func(cmd *cobra.Command, args []string, _ string) ([]cobra.Completion, cobra.ShellCompDirective) {
		if len(args) > 0 {
			return nil, cobra.ShellCompDirectiveNoFileComp
		}
		e, err := o.connect()
		if err != nil {
			return nil, cobra.ShellCompDirectiveNoFileComp
		}
		list := newList()
		if err := e.c.List(cmd.Context(), list, client.InNamespace(e.ns)); err != nil {
			return nil, cobra.ShellCompDirectiveNoFileComp
		}
		var names []cobra.Completion
		_ = apimeta.EachListItem(list, func(obj runtime.Object) error {
			if m, ok := obj.(metav1.Object); ok {
				names = append(names, m.GetName())
			}
			return nil
		})
		return names, cobra.ShellCompDirectiveNoFileComp
	}
}

// registerNameCompletion completes --namespace and --context like kubectl.
func registerNameCompletion(root *cobra.Command, o *options) {
	_ = root.RegisterFlagCompletionFunc("namespace", func(cmd *cobra.Command, _ []string, _ string) ([]cobra.Completion, cobra.ShellCompDirective) {
		return namespaces(cmd, o), cobra.ShellCompDirectiveNoFileComp
	})
	_ = root.RegisterFlagCompletionFunc("context", func(*cobra.Command, []string, string) ([]cobra.Completion, cobra.ShellCompDirective) {
		raw, err := o.config.ToRawKubeConfigLoader().RawConfig()
		if err != nil {
			return nil, cobra.ShellCompDirectiveNoFileComp
		}
		var names []cobra.Completion
		for name := range raw.Contexts {
			names = append(names, name)
		}
		return names, cobra.ShellCompDirectiveNoFileComp
	})
}

func namespaces(cmd *cobra.Command, o *options) []cobra.Completion {
	e, err := o.connect()
	if err != nil {
		return nil
	}
	list := &corev1.NamespaceList{}
	if err := e.c.List(cmd.Context(), list); err != nil {
		return nil
	}
	names := make([]cobra.Completion, 0, len(list.Items))
	for _, ns := range list.Items {
		names = append(names, ns.Name)
	}
	return names
}
