// Package clustertest runs multi-process scenarios on loopback for fault tests: it starts,
// kills (SIGKILL), pauses (SIGSTOP), resumes and restarts server processes, and puts TCP
// proxies between them whose links can be black-holed and healed, so a test can cut one
// server off from another without touching the rest of the machine.
//
// Everything listens on 127.0.0.1 only. Processes and proxies are tied to the test that made
// them and are stopped when it ends, so a failing test leaves nothing running.
package clustertest
