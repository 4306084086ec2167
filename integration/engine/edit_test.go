package engine

import (
	"bytes"
	"encoding/json"
	"strings"
	"testing"
	"time"

	"github.com/ductus/ductus/integration/access"
	"github.com/ductus/ductus/integration/api"
	"github.com/ductus/ductus/integration/ixstore"
	"github.com/ductus/ductus/internal/testutil"
)

// An edit sends a corrected copy: its keys come from the new payload, it
// goes to the tail of its lane (after what the lane sent meanwhile), the
// original's quarantined delivery reads "replaced by <copy>" and leaves
// the quarantine, both ends are audited, and a payload that is not HL7,
// a caller without the payloads permission and an edit with nothing
// quarantined are refused.
func TestAPIEdit(t *testing.T) {
	forEachBackend(t, func(t *testing.T, be ixstore.Backend) {
		e, base, mllpAddr, recv := resendEngine(t, be)
		op, viewer, auditor := actionTokens(t, e)
		_, opNoPayloads := newToken(t, e, "op-no-payloads", access.Operator)

		e1, d := sendStored(t, base, op, mllpAddr, "E1", "BAD", "quarantined")
		if d.Reason == nil || !strings.HasPrefix(*d.Reason, "bad MRN") {
			t.Fatalf("E1's quarantine: %+v", d)
		}
		if ack := sendOne(t, mllpAddr, hl7With("B2", "GOOD", "")); ack.Code != "AA" {
			t.Fatalf("B2: %s", ack.Code)
		}
		testutil.Eventually(t, 20*time.Second, "B2 sent", func() bool { return recv.count() == 1 })

		var p api.MessagePayload
		callJSON(t, base, op, "GET", "/api/v1/messages/"+e1+"/payload", "", 200, &p)
		fixed := strings.Replace(p.Payload, "|BAD^", "|GOOD^", 1)
		body, _ := json.Marshal(map[string]any{"payload": fixed, "reason": "MRN typo"})
		for _, c := range []struct {
			who, token, body string
			status           int
			says             string
		}{
			{"a viewer", viewer, string(body), 403, "operator"},
			{"an operator without payloads", opNoPayloads, string(body), 403, "payloads"},
			{"not HL7", op, `{"payload":"hello","reason":"x"}`, 400, "not hl7"},
			{"no reason", op, `{"payload":"hello"}`, 400, "reason"},
			{"a pending destination named", op, `{"payload":` + string(mustJSON(fixed)) + `,"reason":"x","destinations":["nope"]}`, 404, "nope"},
		} {
			if st, b := call(t, base, c.token, "POST", "/api/v1/messages/"+e1+"/edit", c.body); st != c.status || !bytes.Contains(bytes.ToLower(b), []byte(c.says)) {
				t.Errorf("%s: %d %s; want %d saying %q", c.who, st, b, c.status, c.says)
			}
		}

		var ed api.Edited
		callJSON(t, base, op, "POST", "/api/v1/messages/"+e1+"/edit", string(body), 201, &ed)
		if ed.Message != e1 || ed.Copy == "" || strings.Join(ed.Destinations, ",") != "out" || strings.Join(ed.Replaced, ",") != "out" {
			t.Fatalf("edit: %+v", ed)
		}
		waitDelivery(t, base, op, ed.Copy, "sent")
		if got := strings.Join(controlIDs(recv), ","); got != "B2,E1" {
			t.Fatalf("the receiver got %s, want B2,E1 (the copy at the lane's tail)", got)
		}
		if last := recv.bodies()[1]; !bytes.Contains(last, []byte("|GOOD^")) {
			t.Fatalf("the receiver got the uncorrected payload: %q", last)
		}
		var orig, cp api.Message
		callJSON(t, base, op, "GET", "/api/v1/messages/"+e1, "", 200, &orig)
		if orig.Deliveries[0].Status != "dismissed" || orig.Deliveries[0].Reason == nil || *orig.Deliveries[0].Reason != "replaced by "+ed.Copy {
			t.Fatalf("the original's delivery: %+v", orig.Deliveries[0])
		}
		callJSON(t, base, op, "GET", "/api/v1/messages/"+ed.Copy, "", 200, &cp)
		if cp.Message.EditedFrom == nil || *cp.Message.EditedFrom != e1 || cp.Message.OrderingKey == nil || *cp.Message.OrderingKey != "GOOD" {
			t.Fatalf("the copy: %+v", cp.Message)
		}
		checkQuarantineList(t, base, viewer, nil, nil)

		// Nothing is quarantined now: a plain edit is refused.
		if st, b := call(t, base, op, "POST", "/api/v1/messages/"+e1+"/edit", string(body)); st != 409 {
			t.Fatalf("an edit with nothing quarantined: %d %s", st, b)
		}
		var audit api.AuditPage
		callJSON(t, base, auditor, "GET", "/api/v1/audit?action=editMessage", "", 200, &audit)
		targets := map[string]string{}
		for _, en := range audit.Entries {
			if en.Target != nil {
				targets[*en.Target] += string(en.Outcome) + " "
			}
		}
		if !strings.Contains(targets[e1], "ok") || targets[ed.Copy] != "ok " {
			t.Fatalf("audit rows by target: %v", targets)
		}
	})
}

func mustJSON(v any) []byte {
	b, _ := json.Marshal(v)
	return b
}
