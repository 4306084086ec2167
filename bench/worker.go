package main

import (
	"context"
	"fmt"
	"os"
	"os/exec"
	"os/signal"
	"syscall"
	"time"
)

// workerMain runs a worker process (process_4_workers): a host over the
// given database until SIGTERM, then a graceful shutdown.
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
	sig := make(chan os.Signal, 1)
	signal.Notify(sig, syscall.SIGTERM, syscall.SIGINT)
	<-sig
	return h.Shutdown(context.Background())
}

// startWorkers starts n worker processes of this binary on dsn and waits
// until each is ready; stop ends them gracefully.
func startWorkers(r *runner, dsn string, n int) (stop func(), err error) {
	var cmds []*exec.Cmd
	stop = func() {
		for _, c := range cmds {
			_ = c.Process.Signal(syscall.SIGTERM)
		}
		for _, c := range cmds {
			_ = c.Wait()
		}
	}
	for i := 0; i < n; i++ {
		c := exec.Command(os.Args[0], "-worker", "-backend", r.o.backend, "-dsn", dsn, "-durability", r.o.durability)
		c.Stderr = os.Stderr
		out, err := c.StdoutPipe()
		if err != nil {
			stop()
			return nil, err
		}
		if err := c.Start(); err != nil {
			stop()
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
				stop()
				return nil, fmt.Errorf("worker %d did not start: %w", i, err)
			}
		case <-time.After(time.Minute):
			stop()
			return nil, fmt.Errorf("worker %d did not start within a minute", i)
		}
	}
	return stop, nil
}
