//go:build !linux

package lakehost

import "syscall"

// childSysProcAttr: without Pdeathsig, the child exits when its connections to the server
// close, which they do when the server dies.
func childSysProcAttr() *syscall.SysProcAttr { return nil }
