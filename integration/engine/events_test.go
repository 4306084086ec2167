package engine

import (
	"bufio"
	"context"
	"encoding/json"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/ductus/ductus/integration/access"
	"github.com/ductus/ductus/integration/api"
	"github.com/ductus/ductus/integration/ixstore"
)

// GET /events sends the state at once and then each change: a message
// arriving and its emr delivery being quarantined show up in the stream
// without a reload; the stream ends when the engine stops.
func TestAPIEvents(t *testing.T) {
	forEachBackend(t, func(t *testing.T, be ixstore.Backend) {
		e, base, mllpAddr := apiEngine(t, be)
		_, viewer := newToken(t, e, "viewer", access.Viewer)
		ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
		defer cancel()
		req, err := http.NewRequestWithContext(ctx, "GET", base+"/api/v1/events", nil)
		if err != nil {
			t.Fatal(err)
		}
		req.Header.Set("Authorization", "Bearer "+viewer)
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		defer resp.Body.Close()
		if resp.StatusCode != 200 || resp.Header.Get("Content-Type") != "text/event-stream" {
			t.Fatalf("GET /events: %d %v", resp.StatusCode, resp.Header)
		}
		events := make(chan api.State)
		go func() {
			defer close(events)
			sc := bufio.NewScanner(resp.Body)
			sc.Buffer(make([]byte, 1<<20), 1<<20)
			kind := ""
			for sc.Scan() {
				line := sc.Text()
				switch {
				case strings.HasPrefix(line, "event: "):
					kind = strings.TrimPrefix(line, "event: ")
				case strings.HasPrefix(line, "data: ") && kind == "state":
					var s api.State
					if err := json.Unmarshal([]byte(strings.TrimPrefix(line, "data: ")), &s); err != nil {
						t.Errorf("an event that is not a State: %v: %s", err, line)
						return
					}
					events <- s
				}
			}
		}()
		next := func(what string, ok func(api.State) bool) {
			t.Helper()
			for {
				select {
				case s, open := <-events:
					if !open {
						t.Fatalf("the stream ended waiting for %s", what)
					}
					if ok(s) {
						return
					}
				case <-ctx.Done():
					t.Fatalf("no event with %s", what)
				}
			}
		}
		emr := func(s api.State) api.Destination {
			for _, d := range s.Interfaces[0].Destinations {
				if d.Name == "emr" {
					return d
				}
			}
			t.Fatalf("no emr in %+v", s)
			return api.Destination{}
		}
		next("the first state", func(s api.State) bool {
			return len(s.Interfaces) == 1 && emr(s).Quarantined == 0 && !s.Drain.Draining
		})
		if ack := sendOne(t, mllpAddr, hl7With("EV1", "MRN1", "")); ack.Code != "AA" {
			t.Fatalf("ACK %s", ack.Code)
		}
		next("emr's quarantine", func(s api.State) bool { return emr(s).Quarantined == 1 && emr(s).Pending == 0 })
	})
}
