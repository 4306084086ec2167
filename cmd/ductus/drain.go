package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"net/http"
	"time"

	"github.com/ductus/ductus/integration/api"
)

// drainCmd drains a running engine through its API: it closes the gates,
// shows what the drain waits for until it is drained, and with -stop the
// engine exits then; -cancel opens the gates again.
func drainCmd(ctx context.Context, args []string, stdout, stderr io.Writer) error {
	fs := flag.NewFlagSet("drain", flag.ContinueOnError)
	fs.SetOutput(stderr)
	base := fs.String("api", defaultAPI(), "the engine's API `address` (DUCTUS_API)")
	stop := fs.Bool("stop", false, "stop the engine once it is drained")
	cancel := fs.Bool("cancel", false, "open the gates again (end a drain)")
	every := fs.Duration("every", time.Second, "how often to show the progress")
	if err := fs.Parse(args); err != nil {
		return &exitError{code: 2, err: errors.New("")}
	}
	if fs.NArg() != 0 || (*stop && *cancel) || *every <= 0 {
		return &exitError{code: 2, err: errors.New("usage: ductus drain [-api address] [-stop | -cancel] [-every 1s]")}
	}
	var d api.Drain
	if *cancel {
		if err := apiCall(ctx, http.MethodDelete, *base, "/api/v1/drain", "", &d); err != nil {
			return err
		}
		fmt.Fprintln(stdout, "the gates are open: the engine takes messages again")
		return nil
	}
	body := ""
	if *stop {
		body = `{"stop":true}`
	}
	if err := apiCall(ctx, http.MethodPost, *base, "/api/v1/drain", body, &d); err != nil {
		return err
	}
	fmt.Fprintln(stdout, "draining: the gates are closed (MLLP listeners closed, HTTP sources answer 503, files and schedules wait)")
	t := time.NewTicker(*every)
	defer t.Stop()
	for !d.Drained {
		fmt.Fprintf(stdout, "waiting: %d in flight, %d pending (%d more in paused destinations)\n", d.InFlight, d.Pending, d.PausedPending)
		select {
		case <-ctx.Done():
			return fmt.Errorf("stopped waiting; the engine is still draining (ductus drain -cancel opens its gates): %w", ctx.Err())
		case <-t.C:
		}
		if err := apiGet(ctx, *base, "/api/v1/drain", &d); err != nil {
			if *stop {
				// It may have drained and stopped between two looks.
				fmt.Fprintln(stdout, "the engine no longer answers: drained and stopped")
				return nil
			}
			return err
		}
	}
	if d.PausedPending > 0 {
		fmt.Fprintf(stdout, "drained (%d messages wait in paused destinations)\n", d.PausedPending)
	} else {
		fmt.Fprintln(stdout, "drained: nothing in flight, nothing pending")
	}
	if *stop {
		fmt.Fprintln(stdout, "the engine is stopping")
	}
	return nil
}
