package engine

import (
	"bytes"
	"fmt"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/ductus/ductus/integration/api"
	"github.com/ductus/ductus/integration/ixstore"
	"github.com/ductus/ductus/internal/testutil"
)

// Bulk actions are all or nothing: a request naming one message that
// cannot be acted on changes none of them; a bulk resend sends every
// delivery, the refused send's too, at its lane's tail in the order
// given; a bulk dismissal empties the quarantine; each is audited once.
func TestAPIBulkActions(t *testing.T) {
	forEachBackend(t, func(t *testing.T, be ixstore.Backend) {
		e, base, mllpAddr, recv := resendEngine(t, be)
		op, viewer, auditor := actionTokens(t, e)

		recv.fail.Store(http.StatusBadRequest)
		a1, _ := sendStored(t, base, op, mllpAddr, "A1", "K", "quarantined")
		recv.fail.Store(0)
		h1, _ := sendStored(t, base, op, mllpAddr, "H1", "HOLD", "quarantined")
		b1, _ := sendStored(t, base, op, mllpAddr, "B1", "BAD", "quarantined")
		c1, _ := sendStored(t, base, op, mllpAddr, "C1", "K", "sent")

		bad := []struct {
			name, path, body string
			status           int
			says             string
		}{
			{"one sent among them", "/api/v1/messages/resend", fmt.Sprintf(`{"ids":[%q,%q]}`, a1, c1), 409, c1},
			{"an unknown one", "/api/v1/messages/resend", fmt.Sprintf(`{"ids":[%q,"0190-nope"]}`, a1), 404, "0190-nope"},
			{"a sent one dismissed", "/api/v1/messages/dismiss", fmt.Sprintf(`{"ids":[%q,%q],"reason":"x"}`, b1, c1), 409, c1},
			{"twice the same", "/api/v1/messages/resend", fmt.Sprintf(`{"ids":[%q,%q]}`, a1, a1), 400, "ids"},
			{"none", "/api/v1/messages/resend", `{"ids":[]}`, 400, "ids"},
			{"too many", "/api/v1/messages/resend", `{"ids":["` + strings.Repeat(`x","`, 500) + `y"]}`, 400, "ids"},
			{"no reason", "/api/v1/messages/dismiss", fmt.Sprintf(`{"ids":[%q]}`, b1), 400, "reason"},
		}
		for _, c := range bad {
			st, b := call(t, base, op, "POST", c.path, c.body)
			if st != c.status || !bytes.Contains(b, []byte(c.says)) {
				t.Errorf("%s: %d %s; want %d naming %s", c.name, st, b, c.status, c.says)
			}
		}
		if st, _ := call(t, base, viewer, "POST", "/api/v1/messages/resend", fmt.Sprintf(`{"ids":[%q]}`, a1)); st != 403 {
			t.Fatalf("a viewer's bulk resend: %d", st)
		}
		// Nothing happened: all three are still quarantined.
		checkQuarantineList(t, base, viewer, []string{b1, h1, a1}, []string{"lane", "lane", "send"})

		var dismissed api.BulkDismissed
		callJSON(t, base, op, "POST", "/api/v1/messages/dismiss", fmt.Sprintf(`{"ids":[%q],"reason":"wrong patient"}`, b1), 200, &dismissed)
		if len(dismissed.Messages) != 1 || dismissed.Messages[0].Message != b1 || strings.Join(dismissed.Messages[0].Destinations, ",") != "out" {
			t.Fatalf("bulk dismiss: %+v", dismissed)
		}
		var resent api.BulkResent
		callJSON(t, base, op, "POST", "/api/v1/messages/resend", fmt.Sprintf(`{"ids":[%q,%q]}`, h1, a1), 200, &resent)
		if len(resent.Messages) != 2 || resent.Messages[0].Message != h1 || resent.Messages[1].Deliveries[0] != (api.ResentDelivery{Destination: "out", Was: "quarantined", Placement: api.LaneTail}) {
			t.Fatalf("bulk resend: %+v", resent)
		}
		waitDelivery(t, base, op, a1, "sent")
		waitDelivery(t, base, op, h1, "sent")
		testutil.Eventually(t, 10*time.Second, "three sent", func() bool { return recv.count() == 3 })
		if got := strings.Join(controlIDs(recv), ","); got != "C1,H1,A1" {
			t.Fatalf("the receiver got %s, want C1,H1,A1 (the lane's tail, in the order given)", got)
		}
		checkQuarantineList(t, base, viewer, nil, nil)

		var audit api.AuditPage
		// A refusal by the handler is a row before and a refused row
		// after (the sent one, the unknown one); the document's refusals
		// (400) come before any row.
		for action, want := range map[string]string{"bulkResend": "ok,refused,ok,refused,ok", "bulkDismiss": "ok,refused,ok"} {
			callJSON(t, base, auditor, "GET", "/api/v1/audit?action="+action, "", 200, &audit)
			var got []string
			for _, en := range audit.Entries {
				got = append(got, string(en.Outcome))
			}
			if strings.Join(got, ",") != want {
				t.Errorf("%s audit rows: %v", action, got)
			}
		}
	})
}
