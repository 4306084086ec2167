package main

import (
	"context"
	"flag"
	"fmt"
	"io"
	"net/url"
	"strconv"
	"strings"
	"text/tabwriter"
	"time"

	"github.com/ductus/ductus/integration/api"
)

// messagesCmd lists an interface's messages through the API, filtered as
// the message browser filters them (a viewer token).
func messagesCmd(ctx context.Context, args []string, stdout, stderr io.Writer) error {
	const usage = "ductus messages [-api address] [-key MRN] [-dedupe MSH-10] [-type ADT^A01] [-status s] [-since t] [-until t] [-limit n] [-before cursor] <interface>"
	var key, dedupe, typ, status, since, until, before *string
	var limit *int
	base, rest, err := actionFlags("messages", args, stderr, func(fs *flag.FlagSet) {
		key = fs.String("key", "", "the ordering key exactly (e.g. the MRN)")
		dedupe = fs.String("dedupe", "", "the dedupe key exactly (e.g. MSH-10)")
		typ = fs.String("type", "", "the message type exactly (HL7: ADT^A01)")
		status = fs.String("status", "", "the intake status: pending, duplicate or rejected")
		since = fs.String("since", "", "received at or after (RFC 3339, or a duration ago: 1h)")
		until = fs.String("until", "", "received before (RFC 3339, or a duration ago)")
		limit = fs.Int("limit", 50, "messages on the page (1-500)")
		before = fs.String("before", "", "the page after this cursor (the previous page's next)")
	})
	if err != nil {
		return err
	}
	if len(rest) != 1 {
		return usageErr(usage)
	}
	q := url.Values{}
	for k, v := range map[string]string{"key": *key, "dedupe_key": *dedupe, "type": *typ, "status": *status, "before": *before} {
		if v != "" {
			q.Set(k, v)
		}
	}
	for k, v := range map[string]string{"since": *since, "until": *until} {
		if v == "" {
			continue
		}
		t, err := parseWhen(v, time.Now())
		if err != nil {
			return &exitError{code: 2, err: fmt.Errorf("-%s: %w", k, err)}
		}
		q.Set(k, t.UTC().Format(time.RFC3339Nano))
	}
	q.Set("limit", strconv.Itoa(*limit))
	var page api.MessagePage
	if err := apiGet(ctx, base, "/api/v1/interfaces/"+url.PathEscape(rest[0])+"/messages?"+q.Encode(), &page); err != nil {
		return err
	}
	tw := tabwriter.NewWriter(stdout, 0, 4, 2, ' ', 0)
	fmt.Fprintln(tw, "ID\tRECEIVED\tTYPE\tKEY\tDEDUPE KEY\tSTATUS\tSIZE")
	for _, m := range page.Messages {
		fmt.Fprintf(tw, "%s\t%s\t%s\t%s\t%s\t%s\t%d\n", m.Id, m.ReceivedAt.Local().Format("2006-01-02 15:04:05.000"),
			orDash(deref(m.Type)), orDash(deref(m.OrderingKey)), orDash(deref(m.DedupeKey)), m.Status, m.Size)
	}
	if err := tw.Flush(); err != nil {
		return err
	}
	if page.Next != nil {
		fmt.Fprintf(stdout, "more: -before %s\n", *page.Next)
	}
	return nil
}

// showCmd prints a message's keys and deliveries, and with -payload its
// payload (the payloads permission; the read is audited).
func showCmd(ctx context.Context, args []string, stdout, stderr io.Writer) error {
	const usage = "ductus show [-api address] [-payload] <message-id>"
	var payload *bool
	base, rest, err := actionFlags("show", args, stderr, func(fs *flag.FlagSet) {
		payload = fs.Bool("payload", false, "also print the payload (needs the payloads permission; audited)")
	})
	if err != nil {
		return err
	}
	if len(rest) != 1 {
		return usageErr(usage)
	}
	var m api.Message
	if err := apiGet(ctx, base, "/api/v1/messages/"+url.PathEscape(rest[0]), &m); err != nil {
		return err
	}
	s := m.Message
	fmt.Fprintf(stdout, "message   %s\ninterface %s\nreceived  %s\nstatus    %s (settled: %s)\n", s.Id, s.Interface,
		s.ReceivedAt.Local().Format(time.RFC3339Nano), s.Status, m.Settled)
	for _, f := range []struct{ name, v string }{
		{"type", deref(s.Type)}, {"key", deref(s.OrderingKey)}, {"dedupe", deref(s.DedupeKey)}, {"duplicate of", deref(s.DuplicateOf)},
		{"routed from", deref(s.RoutedFrom)}, {"edited from", deref(s.EditedFrom)},
	} {
		if f.v != "" {
			fmt.Fprintf(stdout, "%-9s %s\n", f.name, f.v)
		}
	}
	tw := tabwriter.NewWriter(stdout, 0, 4, 2, ' ', 0)
	fmt.Fprintln(tw, "\nDESTINATION\tSTATUS\tATTEMPTS\tREASON")
	for _, d := range m.Deliveries {
		fmt.Fprintf(tw, "%s\t%s\t%d\t%s\n", d.Destination, d.Status, d.Attempts, orDash(deref(d.Reason)))
	}
	if err := tw.Flush(); err != nil {
		return err
	}
	if !*payload {
		return nil
	}
	var p api.MessagePayload
	if err := apiGet(ctx, base, "/api/v1/messages/"+url.PathEscape(rest[0])+"/payload", &p); err != nil {
		return err
	}
	fmt.Fprintf(stdout, "\npayload (%s):\n%s\n", p.Encoding, strings.ReplaceAll(p.Payload, "\r", "\n"))
	return nil
}

func deref(s *string) string {
	if s == nil {
		return ""
	}
	return *s
}

// parseWhen reads an RFC 3339 time, or a duration before now ("90m").
func parseWhen(s string, now time.Time) (time.Time, error) {
	if t, err := time.Parse(time.RFC3339Nano, s); err == nil {
		return t, nil
	}
	d, err := time.ParseDuration(s)
	if err != nil || d < 0 {
		return time.Time{}, fmt.Errorf("%q is neither an RFC 3339 time (2026-12-06T05:00:00Z) nor a duration ago (90m)", s)
	}
	return now.Add(-d), nil
}
