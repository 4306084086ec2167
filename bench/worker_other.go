//go:build !linux

package main

import "syscall"

// workerAttr is nil where there is no parent death signal: a worker
// outlives a harness that exits mid-scenario.
func workerAttr() *syscall.SysProcAttr { return nil }
