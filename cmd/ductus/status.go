package main

import (
	"context"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"net/http"
	"os"
	"strings"
	"text/tabwriter"
	"time"

	"github.com/ductus/ductus/integration/api"
)

// defaultAPI is where the API commands look for an engine: DUCTUS_API, or
// the engine's default api.listen.
func defaultAPI() string {
	if a := os.Getenv("DUCTUS_API"); a != "" {
		return a
	}
	return "http://127.0.0.1:7700"
}

// apiGet calls a running engine's API and decodes its JSON answer into v;
// a refusal is an error carrying the API's message.
func apiGet(ctx context.Context, base, path string, v any) error {
	return apiCall(ctx, http.MethodGet, base, path, "", v)
}

// apiCall is apiGet with a method and a JSON body ("" for none); any 2xx
// is success, and v may be nil for an answer without a body.
func apiCall(ctx context.Context, method, base, path, reqBody string, v any) error {
	token, err := tokenFromEnv()
	if err != nil {
		return err
	}
	if !strings.Contains(base, "://") {
		base = "http://" + base
	}
	ctx, cancel := context.WithTimeout(ctx, 30*time.Second)
	defer cancel()
	var rd io.Reader
	if reqBody != "" {
		rd = strings.NewReader(reqBody)
	}
	req, err := http.NewRequestWithContext(ctx, method, strings.TrimRight(base, "/")+path, rd)
	if err != nil {
		return fmt.Errorf("the API address %q: %w", base, err)
	}
	req.Header.Set("Authorization", "Bearer "+token)
	if reqBody != "" {
		req.Header.Set("Content-Type", "application/json")
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		return fmt.Errorf("no engine answers at %s (is it running, with api.listen there? set -api or DUCTUS_API): %w", base, err)
	}
	defer resp.Body.Close()
	body, err := io.ReadAll(io.LimitReader(resp.Body, 64<<20))
	if err != nil {
		return fmt.Errorf("reading the answer of %s: %w", base, err)
	}
	if resp.StatusCode < 200 || resp.StatusCode > 299 {
		var e api.Error
		if json.Unmarshal(body, &e) == nil && e.Error != "" {
			return fmt.Errorf("the engine at %s refused (%s): %s", base, resp.Status, e.Error)
		}
		return fmt.Errorf("the engine at %s answered %s", base, resp.Status)
	}
	if v == nil || resp.StatusCode == http.StatusNoContent {
		return nil
	}
	if err := json.Unmarshal(body, v); err != nil {
		return fmt.Errorf("the answer of %s is not what this ductus expects (another version?): %w", base, err)
	}
	return nil
}

// ageSince is how long before now t was, to the second ("-" without t).
func ageSince(now time.Time, t *time.Time) string {
	if t == nil {
		return "-"
	}
	return max(0, now.Sub(*t)).Round(time.Second).String()
}

// statusCmd prints every interface of a running engine with its state and
// each destination's queue.
func statusCmd(ctx context.Context, args []string, stdout, stderr io.Writer) error {
	fs := flag.NewFlagSet("status", flag.ContinueOnError)
	fs.SetOutput(stderr)
	base := fs.String("api", defaultAPI(), "the engine's API `address` (DUCTUS_API)")
	if err := fs.Parse(args); err != nil {
		return &exitError{code: 2, err: errors.New("")}
	}
	if fs.NArg() != 0 {
		return &exitError{code: 2, err: errors.New("usage: ductus status [-api address]")}
	}
	var list api.InterfaceList
	if err := apiGet(ctx, *base, "/api/v1/interfaces", &list); err != nil {
		return err
	}
	tw := tabwriter.NewWriter(stdout, 0, 4, 2, ' ', 0)
	fmt.Fprintln(tw, "INTERFACE\tSTATE\tDESTINATION\tTYPE\tPENDING\tOLDEST\tQUARANTINED\tPAUSED")
	now := time.Now()
	for _, in := range list.Interfaces {
		if len(in.Destinations) == 0 {
			fmt.Fprintf(tw, "%s\t%s\t-\t-\t-\t-\t-\t-\n", in.Name, in.State)
		}
		for i, d := range in.Destinations {
			name, state := in.Name, string(in.State)
			if i > 0 {
				name, state = "", ""
			}
			paused := "-"
			if d.Paused != nil {
				paused = fmt.Sprintf("by %s since %s: %s", d.Paused.By, d.Paused.At.Local().Format("2006-01-02 15:04"), d.Paused.Reason)
			}
			fmt.Fprintf(tw, "%s\t%s\t%s\t%s\t%d\t%s\t%d\t%s\n", name, state, d.Name, d.Type, d.Pending, ageSince(now, d.OldestPendingAt), d.Quarantined, paused)
		}
	}
	return tw.Flush()
}
