package main

import (
	"context"
	"fmt"
	"io"
	"net/url"
	"strconv"
	"text/tabwriter"
	"time"

	"github.com/ductus/ductus/integration/api"
)

// hotspotsCmd prints where an interface's backlog is stuck: per
// destination with a backlog, the lanes held by a failing send (with the
// message, key, attempts and error) and a lane with most of the backlog.
func hotspotsCmd(ctx context.Context, args []string, stdout, stderr io.Writer) error {
	const usage = "ductus hotspots [-api address] <interface>"
	base, rest, err := actionFlags("hotspots", args, stderr, nil)
	if err != nil {
		return err
	}
	if len(rest) != 1 {
		return usageErr(usage)
	}
	var rep api.HotspotReport
	if err := apiGet(ctx, base, "/api/v1/interfaces/"+url.PathEscape(rest[0])+"/hotspots", &rep); err != nil {
		return err
	}
	if len(rep.Destinations) == 0 {
		_, err := fmt.Fprintf(stdout, "%s: nothing is waiting\n", rep.Interface)
		return err
	}
	now := time.Now()
	for _, d := range rep.Destinations {
		fmt.Fprintf(stdout, "%s/%s: %d waiting in %d lanes, %d blocked\n", rep.Interface, d.Destination, d.Waiting, d.LanesWaiting, d.LanesBlocked)
		if d.ReceiverDown {
			fmt.Fprintln(stdout, "  every lane is blocked: the receiver looks down")
		}
		if len(d.Lanes) == 0 {
			continue
		}
		tw := tabwriter.NewWriter(stdout, 0, 4, 2, ' ', 0)
		fmt.Fprintln(tw, "  LANE\tWAITING\tWHY\tMESSAGE\tKEY\tATTEMPTS\tFOR\tLAST ERROR")
		for _, h := range d.Lanes {
			why := "hot"
			if h.Blocked {
				why = "blocked"
				if h.Hot {
					why = "blocked, hot"
				}
			}
			attempts := "-"
			if h.Attempts != nil {
				attempts = strconv.Itoa(*h.Attempts)
			}
			fmt.Fprintf(tw, "  %d\t%d\t%s\t%s\t%s\t%s\t%s\t%s\n", h.Lane, h.Waiting, why, orDash(deref(h.MessageId)),
				orDash(deref(h.Key)), attempts, ageSince(now, h.Since), orDash(deref(h.LastError)))
		}
		if err := tw.Flush(); err != nil {
			return err
		}
	}
	return nil
}
