package lakehost

import "syscall"

// childSysProcAttr makes the kernel kill the child when the server's thread that started it
// dies, so a crashed server leaves no tiering process behind.
func childSysProcAttr() *syscall.SysProcAttr {
	return &syscall.SysProcAttr{Pdeathsig: syscall.SIGKILL}
}
