//go:build !linux

/*
Copyright 2026 The tether Authors.
SPDX-License-Identifier: Apache-2.0
*/

package cluster

import "syscall"

// sysProcAttr: elsewhere, processes are stopped by Stop only.
func sysProcAttr() *syscall.SysProcAttr { return nil }
