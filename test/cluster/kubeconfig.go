/*
Copyright 2026 The tether Authors.
SPDX-License-Identifier: Apache-2.0
*/

package cluster

import (
	"fmt"

	"k8s.io/client-go/tools/clientcmd"
)

// WriteImpersonatingKubeconfig writes to dst a copy of the kubeconfig src
// whose current user acts as user (for a ServiceAccount,
// system:serviceaccount:<namespace>:<name>). The API server then authorizes
// every request as that identity, so a process run with it has exactly the
// permissions RBAC grants the identity, as if it ran in a pod.
func WriteImpersonatingKubeconfig(src, dst, user string) error {
	cfg, err := clientcmd.LoadFromFile(src)
	if err != nil {
		return err
	}
	// Certificate and token file paths stay valid wherever dst is written.
	if err := clientcmd.ResolveLocalPaths(cfg); err != nil {
		return err
	}
	ctx, ok := cfg.Contexts[cfg.CurrentContext]
	if !ok {
		return fmt.Errorf("%s: no current context", src)
	}
	auth, ok := cfg.AuthInfos[ctx.AuthInfo]
	if !ok {
		return fmt.Errorf("%s: context %q names no known user", src, cfg.CurrentContext)
	}
	acting := auth.DeepCopy()
	acting.Impersonate = user
	acting.ImpersonateGroups = nil
	name := ctx.AuthInfo + "-as-" + user
	cfg.AuthInfos[name] = acting
	current := ctx.DeepCopy()
	current.AuthInfo = name
	cfg.Contexts[cfg.CurrentContext] = current
	return clientcmd.WriteToFile(*cfg, dst)
}
