package engine

import (
	"fmt"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/ductus/ductus/integration/access"
	"github.com/ductus/ductus/integration/api"
	"github.com/ductus/ductus/integration/ixstore"
	"github.com/ductus/ductus/internal/testutil"
)

// While the receiver is down every lane with work is blocked by its first
// send: GET /hotspots names each one's message, key, attempts and error
// and says the receiver looks down; GET /interfaces shows the oldest
// pending time and /metrics its age; once the receiver is back the report
// is empty, nothing is pending, and the hour's throughput counts what was
// received and sent.
func TestAPIHotspots(t *testing.T) {
	forEachBackend(t, func(t *testing.T, be ixstore.Backend) {
		recv := newReceiver(t)
		recv.fail.Store(503)
		mllpAddr := testutil.FreePort(t)
		proj := project(t, map[string]string{
			"ductus.yaml": "partitions: 4\nscript: { isolates: 1 }\napi: { listen: \"127.0.0.1:0\" }\n",
			"interfaces/adt/interface.yaml": fmt.Sprintf(`
source: { type: mllp, listen: %q }
ordering_key: PID-3.1
destinations:
  out:
    type: http
    url: %q
    retry: { initial: 20ms, max: 50ms }
`, mllpAddr, recv.srv.URL),
			"interfaces/adt/transform.js": "function transform(msg) { return msg; }\n",
		})
		e := running(t, proj, be)
		testutil.Eventually(t, 10*time.Second, "the API to listen", func() bool { return e.APIAddr() != "" })
		base := "http://" + e.APIAddr()
		_, viewer := newToken(t, e, "viewer", access.Viewer)
		_, reader := newToken(t, e, "reader", access.Viewer, access.Payloads)

		start := time.Now().Add(-time.Second)
		keys := []string{"K1", "K2", "K3", "K4", "K5", "K6"}
		for i := range 2 {
			for _, k := range keys {
				if ack := sendOne(t, mllpAddr, hl7With(fmt.Sprintf("%s-%d", k, i), k, "")); ack.Code != "AA" {
					t.Fatalf("%s-%d: %s", k, i, ack.Code)
				}
			}
		}

		var rep api.HotspotReport
		testutil.Eventually(t, 20*time.Second, "every lane blocked", func() bool {
			callJSON(t, base, viewer, "GET", "/api/v1/interfaces/adt/hotspots", "", 200, &rep)
			return len(rep.Destinations) == 1 && rep.Destinations[0].ReceiverDown
		})
		d := rep.Destinations[0]
		if d.Destination != "out" || d.Waiting != 12 || d.LanesWaiting == 0 || d.LanesBlocked != d.LanesWaiting || len(d.Lanes) != d.LanesBlocked {
			t.Fatalf("the report: %+v", d)
		}
		for _, h := range d.Lanes {
			if !h.Blocked || h.MessageId == nil || h.Key == nil || !slices.Contains(keys, *h.Key) || h.Attempts == nil || *h.Attempts < 1 ||
				h.LastError == nil || !strings.Contains(*h.LastError, "503") || h.Since == nil || h.Since.Before(start) {
				t.Fatalf("a blocked lane: %+v", h)
			}
			// The lane's first message is the blocking one: it is on the
			// lane, with the key named, and it is that key's first (control
			// ID <key>-0; the first round went out before the second).
			var m api.Message
			callJSON(t, base, viewer, "GET", "/api/v1/messages/"+*h.MessageId, "", 200, &m)
			if m.Message.OrderingKey == nil || *m.Message.OrderingKey != *h.Key || m.Message.Lane == nil || *m.Message.Lane != h.Lane {
				t.Fatalf("lane %d is blocked by %+v, which is not its message", h.Lane, m.Message)
			}
			var p api.MessagePayload
			callJSON(t, base, reader, "GET", "/api/v1/messages/"+*h.MessageId+"/payload", "", 200, &p)
			if !strings.Contains(p.Payload, "|"+*h.Key+"-0|") {
				t.Fatalf("lane %d is blocked by a later message of %s, not its first:\n%s", h.Lane, *h.Key, p.Payload)
			}
		}

		var list api.InterfaceList
		callJSON(t, base, viewer, "GET", "/api/v1/interfaces", "", 200, &list)
		out := list.Interfaces[0].Destinations[0]
		if out.Pending != 12 || out.OldestPendingAt == nil || out.OldestPendingAt.Before(start) || out.OldestPendingAt.After(time.Now()) {
			t.Fatalf("the destination: %+v", out)
		}
		_, b := call(t, base, viewer, "GET", "/metrics", "")
		age := regexp.MustCompile(`ductus_destination_oldest_pending_age_seconds\{destination="out",interface="adt"\} (\S+)`).FindSubmatch(b)
		if age == nil {
			t.Fatalf("metrics lack the oldest pending age:\n%.2000s", b)
		}
		if v, err := strconv.ParseFloat(string(age[1]), 64); err != nil || v <= 0 || v > time.Since(start).Seconds() {
			t.Fatalf("oldest pending age %s, want between 0 and %s", age[1], time.Since(start))
		}

		if st, b := call(t, base, viewer, "GET", "/api/v1/interfaces/nope/hotspots", ""); st != 404 || !strings.Contains(string(b), "nope") {
			t.Fatalf("an unknown interface: %d %s", st, b)
		}

		recv.fail.Store(0)
		testutil.Eventually(t, 30*time.Second, "every message sent", func() bool { return recv.count() == 12 })
		defer func() {
			if t.Failed() {
				t.Logf("hotspots %+v, destination %+v", rep, list.Interfaces[0].Destinations[0])
			}
		}()
		testutil.Eventually(t, 10*time.Second, "nothing pending", func() bool {
			// Decoded afresh: an absent field must not keep the last value.
			rep, list = api.HotspotReport{}, api.InterfaceList{}
			callJSON(t, base, viewer, "GET", "/api/v1/interfaces/adt/hotspots", "", 200, &rep)
			callJSON(t, base, viewer, "GET", "/api/v1/interfaces", "", 200, &list)
			return len(rep.Destinations) == 0 && list.Interfaces[0].Destinations[0].OldestPendingAt == nil
		})
		tp := list.Interfaces[0].Throughput
		if tp == nil || tp.BucketSeconds != 60 || len(tp.Received) != 60 || sum(tp.Received) != 12 || sum(tp.Sent) != 12 {
			t.Fatalf("the hour's throughput: %+v", tp)
		}
	})
}

func sum(v []int64) (n int64) {
	for _, x := range v {
		n += x
	}
	return n
}

// pickHotspots keeps blocked lanes and a hot one, most waiting first.
func TestPickHotspots(t *testing.T) {
	for _, c := range []struct {
		name  string
		lanes []api.Hotspot
		total int64
		want  string // lane:waiting:blocked/hot, in order
	}{
		{"nothing stuck", []api.Hotspot{{Lane: 0, Waiting: 5}, {Lane: 1, Waiting: 7}}, 12, ""},
		{"blocked lanes, most waiting first", []api.Hotspot{{Lane: 0, Waiting: 5, Blocked: true}, {Lane: 1, Waiting: 7}, {Lane: 2, Waiting: 9, Blocked: true}}, 21, "2:9:b 0:5:b"},
		{"a hot lane", []api.Hotspot{{Lane: 0, Waiting: 150}, {Lane: 1, Waiting: 20}}, 170, "0:150:h"},
		{"most, but under the minimum", []api.Hotspot{{Lane: 0, Waiting: 99}, {Lane: 1, Waiting: 1}}, 100, ""},
		{"half is not most", []api.Hotspot{{Lane: 0, Waiting: 100}, {Lane: 1, Waiting: 100}}, 200, ""},
		{"hot and blocked", []api.Hotspot{{Lane: 3, Waiting: 300, Blocked: true}, {Lane: 1, Waiting: 10, Blocked: true}}, 310, "3:300:bh 1:10:b"},
	} {
		t.Run(c.name, func(t *testing.T) {
			var got []string
			for _, h := range pickHotspots(c.lanes, c.total) {
				s := fmt.Sprintf("%d:%d:", h.Lane, h.Waiting)
				if h.Blocked {
					s += "b"
				}
				if h.Hot {
					s += "h"
				}
				got = append(got, s)
			}
			if g := strings.Join(got, " "); g != c.want {
				t.Errorf("got %q, want %q", g, c.want)
			}
		})
	}
}
