package main

import "syscall"

// workerAttr makes a worker process die with the harness (Linux's parent
// death signal), so a harness that exits mid-scenario (a watchdog, a
// crash) leaves no worker running on its database. Linux sends it when the
// forking thread ends, not the process; the Go runtime keeps its threads
// unless a goroutine exits while locked to one, which the harness never
// does.
func workerAttr() *syscall.SysProcAttr {
	return &syscall.SysProcAttr{Pdeathsig: syscall.SIGKILL}
}
