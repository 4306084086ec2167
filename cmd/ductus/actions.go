package main

import (
	"context"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"strings"

	"github.com/ductus/ductus/integration/api"
)

// The operator's actions from a shell, through a running engine's API (an
// operator token in DUCTUS_TOKEN): the same operations, access checks and
// audit rows as the API's.

// actionFlags parses an action's flags (-api and what define adds).
func actionFlags(name string, args []string, stderr io.Writer, define func(fs *flag.FlagSet)) (base string, rest []string, err error) {
	fs := flag.NewFlagSet(name, flag.ContinueOnError)
	fs.SetOutput(stderr)
	b := fs.String("api", defaultAPI(), "the engine's API `address` (DUCTUS_API)")
	if define != nil {
		define(fs)
	}
	if err := fs.Parse(args); err != nil {
		return "", nil, &exitError{code: 2, err: errors.New("")}
	}
	return *b, fs.Args(), nil
}

// usageErr is a usage error (exit 2).
func usageErr(usage string) error {
	return &exitError{code: 2, err: errors.New("usage: " + usage)}
}

// jsonBody is v as a request body.
func jsonBody(v any) (string, error) {
	b, err := json.Marshal(v)
	return string(b), err
}

// destList is a -dest value: destination names, comma-separated.
func destList(s string) []string {
	var out []string
	for _, d := range strings.Split(s, ",") {
		if d = strings.TrimSpace(d); d != "" {
			out = append(out, d)
		}
	}
	return out
}

func pauseCmd(ctx context.Context, args []string, stdout, stderr io.Writer) error {
	const usage = `ductus pause [-api address] -reason "why" <interface> <destination>`
	var reason *string
	base, rest, err := actionFlags("pause", args, stderr, func(fs *flag.FlagSet) {
		reason = fs.String("reason", "", "why (required; kept with the pause and in the audit log)")
	})
	if err != nil {
		return err
	}
	if len(rest) != 2 || strings.TrimSpace(*reason) == "" {
		return usageErr(usage)
	}
	body, err := jsonBody(api.PauseRequest{Reason: *reason})
	if err != nil {
		return err
	}
	var p api.Pause
	if err := apiCall(ctx, http.MethodPost, base, destPath(rest[0], rest[1]), body, &p); err != nil {
		return err
	}
	fmt.Fprintf(stdout, "%s/%s paused by %s: its messages wait until ductus resume\n", rest[0], rest[1], p.By)
	return nil
}

func resumeCmd(ctx context.Context, args []string, stdout, stderr io.Writer) error {
	const usage = "ductus resume [-api address] <interface> <destination>"
	base, rest, err := actionFlags("resume", args, stderr, nil)
	if err != nil {
		return err
	}
	if len(rest) != 2 {
		return usageErr(usage)
	}
	if err := apiCall(ctx, http.MethodDelete, base, destPath(rest[0], rest[1]), "", nil); err != nil {
		return err
	}
	fmt.Fprintf(stdout, "%s/%s resumed\n", rest[0], rest[1])
	return nil
}

// destPath is a destination's pause path.
func destPath(iface, dest string) string {
	return "/api/v1/interfaces/" + url.PathEscape(iface) + "/destinations/" + url.PathEscape(dest) + "/pause"
}

func resendCmd(ctx context.Context, args []string, stdout, stderr io.Writer) error {
	const usage = "ductus resend [-api address] [-dest a,b] <message-id>"
	var dest *string
	base, rest, err := actionFlags("resend", args, stderr, func(fs *flag.FlagSet) {
		dest = fs.String("dest", "", "replay these destinations whatever they ended as (default: every quarantined delivery)")
	})
	if err != nil {
		return err
	}
	if len(rest) != 1 {
		return usageErr(usage)
	}
	body := ""
	if ds := destList(*dest); len(ds) > 0 {
		if body, err = jsonBody(api.ResendRequest{Destinations: &ds}); err != nil {
			return err
		}
	}
	var r api.Resent
	if err := apiCall(ctx, http.MethodPost, base, "/api/v1/messages/"+url.PathEscape(rest[0])+"/resend", body, &r); err != nil {
		return err
	}
	for _, d := range r.Deliveries {
		where := "next in its lane (in place)"
		if d.Placement == api.LaneTail {
			where = "at the tail of its lane (the transform runs again)"
		}
		fmt.Fprintf(stdout, "%s: was %s, resent %s\n", d.Destination, d.Was, where)
	}
	return nil
}

func dismissCmd(ctx context.Context, args []string, stdout, stderr io.Writer) error {
	const usage = `ductus dismiss [-api address] -reason "why" [-dest a,b] <message-id>`
	var reason, dest *string
	base, rest, err := actionFlags("dismiss", args, stderr, func(fs *flag.FlagSet) {
		reason = fs.String("reason", "", "why (required; kept with the delivery and in the audit log)")
		dest = fs.String("dest", "", "dismiss only these destinations (default: every quarantined delivery)")
	})
	if err != nil {
		return err
	}
	if len(rest) != 1 || strings.TrimSpace(*reason) == "" {
		return usageErr(usage)
	}
	req := api.DismissRequest{Reason: *reason}
	if ds := destList(*dest); len(ds) > 0 {
		req.Destinations = &ds
	}
	body, err := jsonBody(req)
	if err != nil {
		return err
	}
	var d api.Dismissed
	if err := apiCall(ctx, http.MethodPost, base, "/api/v1/messages/"+url.PathEscape(rest[0])+"/dismiss", body, &d); err != nil {
		return err
	}
	fmt.Fprintf(stdout, "dismissed: %s\n", strings.Join(d.Destinations, ", "))
	return nil
}
