/*
Copyright 2026 The tether Authors.
SPDX-License-Identifier: Apache-2.0
*/

package cluster

import "syscall"

// sysProcAttr makes the kernel kill a started process when the process that
// started it dies, so a test binary killed by a timeout leaves no operator,
// agent or controller manager behind.
func sysProcAttr() *syscall.SysProcAttr {
	return &syscall.SysProcAttr{Pdeathsig: syscall.SIGKILL}
}
