package main

import (
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"syscall"
	"time"
)

// workerMain runs a worker process (process_4_workers): a host over the
// given database until ctx ends, then a graceful shutdown.
//
// ctx is run's signal context, whose SIGTERM handler is registered before
// READY is printed. The worker once registered a second handler of its own
// after printing READY: a SIGTERM sent in between (the parent sends it as
// soon as the backlog is done, which in a smoke run can be right after the
// last worker starts) only cancelled ctx, the worker waited on its own
// channel for good, and CI's bench smoke run hung until its time ran out.
func workerMain(ctx context.Context, e env, o options) error {
	be, err := e.open(ctx, o.dsn, nil)
	if err != nil {
		return err
	}
	defer be.Close()
	w := &world{}
	h, err := w.newHost(ctx, be, nil)
	if err != nil {
		return err
	}
	fmt.Println("READY")
	<-ctx.Done()
	return h.Shutdown(context.Background())
}

// workerGrace bounds a worker's graceful shutdown after SIGTERM. A worker
// still running then is hung: it is sent SIGQUIT, so the Go runtime prints
// its goroutines on stderr, then killed, and the scenario fails.
const workerGrace = time.Minute

// startWorkers starts n worker processes of this binary on dsn and waits
// until each is ready; stop ends them gracefully and reports any that did
// not end within workerGrace or exited with an error.
func startWorkers(r *runner, dsn string, n int) (stop func() error, err error) {
	var cmds []*exec.Cmd
	stop = func() error {
		for _, c := range cmds {
			_ = c.Process.Signal(syscall.SIGTERM)
		}
		var errs []error
		deadline := time.Now().Add(workerGrace)
		for i, c := range cmds {
			if err := waitWorker(c, time.Until(deadline)); err != nil {
				errs = append(errs, fmt.Errorf("worker %d (pid %d): %w", i, c.Process.Pid, err))
			}
		}
		return errors.Join(errs...)
	}
	for i := 0; i < n; i++ {
		c := exec.Command(os.Args[0], "-worker", "-backend", r.o.backend, "-dsn", dsn, "-durability", r.o.durability)
		c.SysProcAttr = workerAttr()
		c.Stderr = os.Stderr
		out, err := c.StdoutPipe()
		if err != nil {
			_ = stop()
			return nil, err
		}
		if err := c.Start(); err != nil {
			_ = stop()
			return nil, err
		}
		cmds = append(cmds, c)
		ready := make(chan error, 1)
		go func() {
			buf := make([]byte, 6)
			_, err := out.Read(buf)
			ready <- err
		}()
		select {
		case err := <-ready:
			if err != nil {
				_ = stop()
				return nil, fmt.Errorf("worker %d did not start: %w", i, err)
			}
		case <-time.After(time.Minute):
			_ = stop()
			return nil, fmt.Errorf("worker %d did not start within a minute", i)
		}
	}
	return stop, nil
}

// waitWorker waits up to d for a signalled worker to exit. Past d it asks
// the worker for a goroutine dump (SIGQUIT makes a Go process print its
// stacks and exit), then kills it if even that does not end it.
func waitWorker(c *exec.Cmd, d time.Duration) error {
	exited := make(chan error, 1)
	go func() { exited <- c.Wait() }()
	select {
	case err := <-exited:
		return err
	case <-time.After(max(d, 0)):
	}
	_ = c.Process.Signal(syscall.SIGQUIT)
	select {
	case <-exited:
	case <-time.After(10 * time.Second):
		_ = c.Process.Kill()
		<-exited
	}
	return fmt.Errorf("still running %s after SIGTERM (goroutines above, from SIGQUIT)", workerGrace)
}
