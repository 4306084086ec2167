// Command ductus is the Ductus integration engine: it runs a project of
// interfaces (HL7 v2 over MLLP, HTTP, files and schedules in; JavaScript
// transforms; MLLP, HTTP and file out) on the Ductus actor runtime.
//
//	ductus run <project>        run a project (--pprof host:port also serves net/http/pprof there)
//	ductus dev                  run the bundled example project on SQLite, everything on localhost
//	ductus validate <project>   check a project without touching a database
//	ductus migrate <project>    create or upgrade the project's database schema
//	ductus status               a running engine's interfaces and queues, through its API
//	ductus user ...             create, list, disable or enable accounts, set passwords (on the server)
//	ductus messages <iface>     an interface's messages, filtered (-key, -dedupe, -type, -status, -since, -until)
//	ductus show <id>            a message's keys and deliveries (-payload: its payload too)
//	ductus token ...            create, list or revoke API tokens (on the server, no API needed)
//	ductus api-spec             print the operator API's OpenAPI document
//	ductus send ...             send HL7 messages over MLLP (a test tool)
//	ductus sink ...             receive HL7 messages over MLLP and ACK them (a test tool)
//	ductus version
package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"os/signal"
	"syscall"
)

// version is set at build time with -ldflags "-X main.version=...".
var version = "dev"

type command struct {
	name    string
	summary string
	run     func(ctx context.Context, args []string, stdout, stderr io.Writer) error
}

func commands() []command {
	return []command{
		{"run", "run a project: ductus run <project-dir>", runCmd},
		{"dev", "run the bundled example project on SQLite with everything on localhost", devCmd},
		{"validate", "check a project (files, keys, routes, scripts) without touching a database", validateCmd},
		{"migrate", "create or upgrade the project's database schema", migrateCmd},
		{"status", "a running engine's interfaces and queues, through its API (DUCTUS_TOKEN)", statusCmd},
		{"drain", "close a running engine's gates and wait until it is drained (-stop: then it exits)", drainCmd},
		{"pause", "pause a destination of a running engine (its messages wait), with a reason", pauseCmd},
		{"resume", "resume a paused destination", resumeCmd},
		{"hotspots", "where an interface's backlog is stuck: lanes blocked by a failing send, and by which message, through the API", hotspotsCmd},
		{"messages", "an interface's messages, filtered by key, MSH-10, type, status and time, through the API", messagesCmd},
		{"show", "a message's keys and deliveries (-payload: and its payload), through the API", showCmd},
		{"resend", "resend a message's quarantined deliveries (or -dest: replay those destinations)", resendCmd},
		{"dismiss", "dismiss a message's quarantined deliveries, with a reason", dismissCmd},
		{"user", "create, list or disable accounts, or set a password, on the server: ductus user create|list|passwd|disable|enable <project-dir> [name]", userCmd},
		{"token", "create, list or revoke API tokens on the server: ductus token create|list|revoke <project-dir>", tokenCmd},
		{"api-spec", "print the operator API's OpenAPI document", apiSpecCmd},
		{"send", "send HL7 v2 messages over MLLP and count the ACKs", sendCmd},
		{"sink", "receive HL7 v2 messages over MLLP and ACK them", sinkCmd},
		{"version", "print the version", func(_ context.Context, _ []string, out, _ io.Writer) error {
			fmt.Fprintln(out, "ductus", version)
			return nil
		}},
	}
}

// exitError carries a specific exit status.
type exitError struct {
	code int
	err  error
}

func (e *exitError) Error() string { return e.err.Error() }

func main() {
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	// The first signal stops gracefully (ctx ends); once it has, the
	// signals get their default action again, so a second one ends the
	// process at once.
	go func() {
		<-ctx.Done()
		stop()
	}()
	os.Exit(run(ctx, os.Args[1:], os.Stdout, os.Stderr))
}

func run(ctx context.Context, args []string, stdout, stderr io.Writer) int {
	if len(args) == 0 || args[0] == "-h" || args[0] == "--help" || args[0] == "help" {
		usage(stderr)
		if len(args) == 0 {
			return 2
		}
		return 0
	}
	for _, c := range commands() {
		if c.name == args[0] {
			err := c.run(ctx, args[1:], stdout, stderr)
			if err == nil {
				return 0
			}
			var ee *exitError
			if errors.As(err, &ee) {
				if ee.err != nil && ee.err.Error() != "" {
					fmt.Fprintln(stderr, "ductus "+c.name+":", ee.err)
				}
				return ee.code
			}
			fmt.Fprintln(stderr, "ductus "+c.name+":", err)
			return 1
		}
	}
	fmt.Fprintf(stderr, "ductus: unknown command %q\n\n", args[0])
	usage(stderr)
	return 2
}

func usage(w io.Writer) {
	fmt.Fprintln(w, "usage: ductus <command> [arguments]")
	fmt.Fprintln(w)
	for _, c := range commands() {
		fmt.Fprintf(w, "  %-9s %s\n", c.name, c.summary)
	}
	fmt.Fprintln(w, "\nRun 'ductus <command> -h' for a command's flags.")
}
