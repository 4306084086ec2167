package engine

import (
	"bytes"
	"fmt"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/ductus/ductus/integration/access"
	"github.com/ductus/ductus/integration/api"
	"github.com/ductus/ductus/integration/ixstore"
	"github.com/ductus/ductus/internal/testutil"
)

// resendEngine runs an interface whose one lane (partitions 1) sends to
// an HTTP receiver, and whose transform holds (quarantines) a message
// with MRN HOLD the first time it sees it (its resend runs the transform
// again and passes) and every message with MRN BAD (only a corrected copy
// passes). The isolate keeps the transform's globals between
// calls.
func resendEngine(t *testing.T, be ixstore.Backend) (e *Engine, base, mllpAddr string, recv *receiver) {
	t.Helper()
	recv = newReceiver(t)
	mllpAddr = testutil.FreePort(t)
	proj := project(t, map[string]string{
		"ductus.yaml": "partitions: 1\nscript: { isolates: 1 }\napi: { listen: \"127.0.0.1:0\" }\n",
		"interfaces/adt/interface.yaml": fmt.Sprintf(`
source: { type: mllp, listen: %q }
ordering_key: PID-3.1
destinations:
  out:
    type: http
    url: %q
    retry: { initial: 10ms, max: 20ms, max_attempts: 2 }
`, mllpAddr, recv.srv.URL),
		"interfaces/adt/transform.js": `
var held = {};
function transform(msg) {
  var id = msg.get("MSH-10");
  if (msg.get("PID-3.1") === "BAD") {
    quarantine("bad MRN");
  }
  if (msg.get("PID-3.1") === "HOLD" && !held[id]) {
    held[id] = true;
    quarantine("held for review");
  }
  return msg;
}
`,
	})
	e = running(t, proj, be)
	testutil.Eventually(t, 10*time.Second, "the API to listen", func() bool { return e.APIAddr() != "" })
	return e, "http://" + e.APIAddr(), mllpAddr, recv
}

// idOf finds the stored ID of the message with control ID ctl.
func idOf(t *testing.T, base, token, ctl string) string {
	t.Helper()
	var page api.MessagePage
	callJSON(t, base, token, "GET", "/api/v1/interfaces/adt/messages?limit=50", "", 200, &page)
	for _, m := range page.Messages {
		if m.DedupeKey != nil && *m.DedupeKey == ctl {
			return m.Id
		}
	}
	// Without dedupe the control ID is not a key: find it in the payload.
	for _, m := range page.Messages {
		var p api.MessagePayload
		callJSON(t, base, token, "GET", "/api/v1/messages/"+m.Id+"/payload", "", 200, &p)
		if strings.Contains(p.Payload, "|"+ctl+"|") {
			return m.Id
		}
	}
	t.Fatalf("no stored message with control ID %s", ctl)
	return ""
}

// waitDelivery waits until the message's delivery to out has status and
// returns it.
func waitDelivery(t *testing.T, base, token, id string, status api.DeliveryStatus) api.Delivery {
	t.Helper()
	var got api.Delivery
	testutil.Eventually(t, 20*time.Second, fmt.Sprintf("message %s %s", id, status), func() bool {
		var m api.Message
		callJSON(t, base, token, "GET", "/api/v1/messages/"+id, "", 200, &m)
		got = m.Deliveries[0]
		return got.Status == status
	})
	return got
}

// sendStored sends one ADT message (control ID ctl, MRN mrn), expects AA
// and returns its stored ID once its delivery to out has status.
func sendStored(t *testing.T, base, token, mllpAddr, ctl, mrn string, status api.DeliveryStatus) (string, api.Delivery) {
	t.Helper()
	if ack := sendOne(t, mllpAddr, hl7With(ctl, mrn, "")); ack.Code != "AA" {
		t.Fatalf("%s: %s", ctl, ack.Code)
	}
	id := idOf(t, base, token, ctl)
	return id, waitDelivery(t, base, token, id, status)
}

// actionTokens are the tokens the action tests call with.
func actionTokens(t *testing.T, e *Engine) (op, viewer, auditor string) {
	_, op = newToken(t, e, "op", access.Operator, access.Payloads)
	_, viewer = newToken(t, e, "viewer", access.Viewer)
	_, auditor = newToken(t, e, "auditor", access.Viewer, access.Audit)
	return op, viewer, auditor
}

// controlIDs are the MSH-10s of what the receiver got, in order.
func controlIDs(r *receiver) []string {
	var out []string
	for _, b := range r.bodies() {
		out = append(out, strings.Split(string(bytes.SplitN(b, []byte("\r"), 2)[0]), "|")[9])
	}
	return out
}

// A send refused by its destination is resent in place and delivered; a
// message the transform held is resent through its lane again, after
// what the lane sent meanwhile; a sent delivery is replayed only when its
// destination is named; every resend is audited, a viewer is refused, and
// the quarantined count comes back to zero.
func TestAPIResend(t *testing.T) {
	forEachBackend(t, func(t *testing.T, be ixstore.Backend) {
		e, base, mllpAddr, recv := resendEngine(t, be)
		op, viewer, auditor := actionTokens(t, e)

		// A1 is refused (400: quarantined at once); H1 is held by the
		// transform; B1 and C1 of A1's key are sent after both.
		recv.fail.Store(http.StatusBadRequest)
		a1, d := sendStored(t, base, op, mllpAddr, "A1", "K", "quarantined")
		if d.Reason == nil || !strings.Contains(*d.Reason, "400") {
			t.Fatalf("A1's quarantine: %+v", d)
		}
		recv.fail.Store(0)
		h1, d := sendStored(t, base, op, mllpAddr, "H1", "HOLD", "quarantined")
		if d.Reason == nil || !strings.HasPrefix(*d.Reason, "held for review") {
			t.Fatalf("H1's quarantine: %+v (%q)", d, *d.Reason)
		}
		for _, c := range []string{"B1", "C1"} {
			if ack := sendOne(t, mllpAddr, hl7With(c, "K", "")); ack.Code != "AA" {
				t.Fatalf("%s: %s", c, ack.Code)
			}
		}
		testutil.Eventually(t, 20*time.Second, "B1 and C1 sent", func() bool { return recv.count() == 2 })
		quarantined := func() int64 {
			var list api.InterfaceList
			callJSON(t, base, op, "GET", "/api/v1/interfaces", "", 200, &list)
			return list.Interfaces[0].Destinations[0].Quarantined
		}
		if q := quarantined(); q != 2 {
			t.Fatalf("quarantined count %d before the resends, want 2 (A1's send, H1's transform)", q)
		}
		checkQuarantineList(t, base, viewer, []string{h1, a1}, []string{"lane", "send"})

		if st, b := call(t, base, viewer, "POST", "/api/v1/messages/"+a1+"/resend", ""); st != 403 {
			t.Fatalf("a viewer's resend: %d %s", st, b)
		}
		var r api.Resent
		callJSON(t, base, op, "POST", "/api/v1/messages/"+a1+"/resend", "", 200, &r)
		if len(r.Deliveries) != 1 || r.Deliveries[0] != (api.ResentDelivery{Destination: "out", Was: "quarantined", Placement: api.InPlace}) {
			t.Fatalf("resend A1: %+v", r)
		}
		waitDelivery(t, base, op, a1, "sent")
		callJSON(t, base, op, "POST", "/api/v1/messages/"+h1+"/resend", `{}`, 200, &r)
		if len(r.Deliveries) != 1 || r.Deliveries[0] != (api.ResentDelivery{Destination: "out", Was: "quarantined", Placement: api.LaneTail}) {
			t.Fatalf("resend H1: %+v", r)
		}
		waitDelivery(t, base, op, h1, "sent")
		if got, want := strings.Join(controlIDs(recv), ","), "B1,C1,A1,H1"; got != want {
			t.Fatalf("the receiver got %s, want %s", got, want)
		}
		if q := quarantined(); q != 0 {
			t.Fatalf("quarantined count %d after the resends", q)
		}
		checkQuarantineList(t, base, viewer, nil, nil)

		// Nothing quarantined is left: a plain resend is refused, a named
		// destination replays the sent delivery.
		if st, b := call(t, base, op, "POST", "/api/v1/messages/"+a1+"/resend", ""); st != 409 || !bytes.Contains(b, []byte("no quarantined delivery")) {
			t.Fatalf("a resend with nothing quarantined: %d %s", st, b)
		}
		callJSON(t, base, op, "POST", "/api/v1/messages/"+a1+"/resend", `{"destinations":["out"]}`, 200, &r)
		if len(r.Deliveries) != 1 || r.Deliveries[0] != (api.ResentDelivery{Destination: "out", Was: "sent", Placement: api.LaneTail}) {
			t.Fatalf("replay A1: %+v", r)
		}
		testutil.Eventually(t, 20*time.Second, "A1 replayed", func() bool { return recv.count() == 5 })
		waitDelivery(t, base, op, a1, "sent")

		bad := []struct{ path, body, says string }{
			{"/api/v1/messages/" + a1 + "/resend", `{"destinations":["nope"]}`, "nope"},
			{"/api/v1/messages/0190-nope/resend", "", "0190-nope"},
		}
		for _, c := range bad {
			if st, b := call(t, base, op, "POST", c.path, c.body); st != 404 || !bytes.Contains(b, []byte(c.says)) {
				t.Errorf("POST %s %s: %d %s; want 404 naming %s", c.path, c.body, st, b, c.says)
			}
		}
		if st, b := call(t, base, op, "POST", "/api/v1/messages/"+a1+"/resend", `{"destinations":[]}`); st != 400 {
			t.Errorf("an empty destination list: %d %s; want 400", st, b)
		}

		var audit api.AuditPage
		callJSON(t, base, auditor, "GET", "/api/v1/audit?action=resendMessage", "", 200, &audit)
		outcomes := map[api.AuditEntryOutcome]int{}
		for _, a := range audit.Entries {
			outcomes[a.Outcome]++
			if a.Actor != "op" {
				t.Errorf("a resend audited as %s", a.Actor)
			}
		}
		// Six resends were audited before they acted (the viewer's was
		// refused before); three of them were then refused.
		if outcomes["ok"] != 6 || outcomes["refused"] != 3 {
			t.Fatalf("audit outcomes %v, want 6 ok and 3 refused: %+v", outcomes, audit.Entries)
		}
	})
}

// A dismissal needs a reason, is final, shows who and why, takes the
// delivery out of the quarantined count, is refused for a delivery that
// is not quarantined, and is undone by naming the destination in a
// resend.
func TestAPIDismiss(t *testing.T) {
	forEachBackend(t, func(t *testing.T, be ixstore.Backend) {
		e, base, mllpAddr, recv := resendEngine(t, be)
		op, viewer, auditor := actionTokens(t, e)

		recv.fail.Store(http.StatusBadRequest)
		d1, _ := sendStored(t, base, op, mllpAddr, "D1", "K", "quarantined")
		recv.fail.Store(0)
		d2, _ := sendStored(t, base, op, mllpAddr, "D2", "HOLD", "quarantined")

		refused := []struct {
			token, path, body string
			status            int
			says              string
		}{
			{viewer, d1, `{"reason":"x"}`, 403, "operator"},
			{op, d1, "", 400, "body"},
			{op, d1, `{}`, 400, "reason"},
			{op, d1, `{"reason":""}`, 400, "reason"},
			{op, d1, `{"reason":"x","destinations":["nope"]}`, 404, "nope"},
			{op, "0190-nope", `{"reason":"x"}`, 404, "0190-nope"},
		}
		for _, c := range refused {
			if st, b := call(t, base, c.token, "POST", "/api/v1/messages/"+c.path+"/dismiss", c.body); st != c.status || !bytes.Contains(b, []byte(c.says)) {
				t.Errorf("dismiss %s %s: %d %s; want %d naming %s", c.path, c.body, st, b, c.status, c.says)
			}
		}

		var got api.Dismissed
		callJSON(t, base, op, "POST", "/api/v1/messages/"+d1+"/dismiss", `{"reason":"sent by phone"}`, 200, &got)
		if len(got.Destinations) != 1 || got.Destinations[0] != "out" {
			t.Fatalf("dismiss D1: %+v", got)
		}
		var m api.Message
		callJSON(t, base, op, "GET", "/api/v1/messages/"+d1, "", 200, &m)
		d := m.Deliveries[0]
		if m.Settled != "dismissed" || d.Status != "dismissed" || d.Reason == nil || *d.Reason != "sent by phone" ||
			d.DismissedBy == nil || *d.DismissedBy != "op" || d.DismissedAt == nil || time.Since(*d.DismissedAt) > time.Minute {
			t.Fatalf("a dismissed message: %+v (delivery %+v)", m, d)
		}
		quarantined := func() int64 {
			var list api.InterfaceList
			callJSON(t, base, op, "GET", "/api/v1/interfaces", "", 200, &list)
			return list.Interfaces[0].Destinations[0].Quarantined
		}
		if q := quarantined(); q != 1 {
			t.Fatalf("quarantined count %d after D1's dismissal, want 1 (D2)", q)
		}
		if st, b := call(t, base, op, "POST", "/api/v1/messages/"+d1+"/dismiss", `{"reason":"again"}`); st != 409 {
			t.Fatalf("a second dismissal: %d %s; want 409", st, b)
		}
		if st, b := call(t, base, op, "POST", "/api/v1/messages/"+d1+"/resend", ""); st != 409 {
			t.Fatalf("a plain resend of a dismissed message: %d %s; want 409", st, b)
		}

		// The transform's quarantine, dismissed by name, then replayed:
		// the transform runs again (and passes) and the dismissal is gone.
		callJSON(t, base, op, "POST", "/api/v1/messages/"+d2+"/dismiss", `{"reason":"test patient","destinations":["out"]}`, 200, &got)
		waitDelivery(t, base, op, d2, "dismissed")
		if q := quarantined(); q != 0 {
			t.Fatalf("quarantined count %d after both dismissals, want 0", q)
		}
		var r api.Resent
		callJSON(t, base, op, "POST", "/api/v1/messages/"+d2+"/resend", `{"destinations":["out"]}`, 200, &r)
		if len(r.Deliveries) != 1 || r.Deliveries[0] != (api.ResentDelivery{Destination: "out", Was: "dismissed", Placement: api.LaneTail}) {
			t.Fatalf("replay D2: %+v", r)
		}
		if d := waitDelivery(t, base, op, d2, "sent"); d.DismissedBy != nil || d.DismissedAt != nil {
			t.Fatalf("a replayed delivery still shows its dismissal: %+v", d)
		}
		if got := strings.Join(controlIDs(recv), ","); got != "D2" {
			t.Fatalf("the receiver got %s, want D2 (D1 was dismissed)", got)
		}

		var audit api.AuditPage
		callJSON(t, base, auditor, "GET", "/api/v1/audit?action=dismissMessage", "", 200, &audit)
		reasons := map[string]bool{}
		for _, a := range audit.Entries {
			if a.Outcome == "ok" && a.Detail != nil {
				reasons[fmt.Sprint((*a.Detail)["reason"])] = true
			}
		}
		if !reasons["sent by phone"] || !reasons["test patient"] {
			t.Fatalf("the audit log lacks the dismissals' reasons: %+v", audit.Entries)
		}
	})
}

// checkQuarantineList pages GET /quarantine one item at a time and checks
// it lists exactly the messages ids (newest first) stopped where stops
// say; an unknown interface is 404 and a cursor it did not make 400.
func checkQuarantineList(t *testing.T, base, token string, ids, stops []string) {
	t.Helper()
	var got, gotStops []string
	next := ""
	for {
		var page api.QuarantinePage
		path := "/api/v1/quarantine?limit=1"
		if next != "" {
			path += "&before=" + next
		}
		callJSON(t, base, token, "GET", path, "", 200, &page)
		for _, it := range page.Items {
			if it.Interface != "adt" || it.Destination != "out" || it.Reason == "" || it.ReceivedAt == nil {
				t.Fatalf("quarantine item: %+v", it)
			}
			got, gotStops = append(got, it.MessageId), append(gotStops, string(it.StoppedAt))
		}
		if page.Next == nil || len(got) > len(ids)+1 {
			break
		}
		next = *page.Next
	}
	if strings.Join(got, ",") != strings.Join(ids, ",") || strings.Join(gotStops, ",") != strings.Join(stops, ",") {
		t.Fatalf("quarantine lists %v stopped at %v; want %v at %v", got, gotStops, ids, stops)
	}
	var one api.QuarantinePage
	callJSON(t, base, token, "GET", "/api/v1/quarantine?interface=adt", "", 200, &one)
	if len(one.Items) != len(ids) {
		t.Fatalf("the interface's quarantine has %d items, want %d", len(one.Items), len(ids))
	}
	if st, b := call(t, base, token, "GET", "/api/v1/quarantine?interface=nope", ""); st != 404 || !bytes.Contains(b, []byte("nope")) {
		t.Fatalf("an unknown interface: %d %s", st, b)
	}
	if st, b := call(t, base, token, "GET", "/api/v1/quarantine?before=yesterday", ""); st != 400 || !bytes.Contains(b, []byte("yesterday")) {
		t.Fatalf("a bad cursor: %d %s", st, b)
	}
}
