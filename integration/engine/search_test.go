package engine

import (
	"fmt"
	"net/url"
	"strings"
	"testing"
	"time"

	"github.com/ductus/ductus/integration/access"
	"github.com/ductus/ductus/integration/api"
	"github.com/ductus/ductus/integration/ixstore"
	"github.com/ductus/ductus/internal/testutil"
)

// hl7Typed is an HL7 message of type typ (MSH-9) with control ID ctl and
// MRN mrn.
func hl7Typed(ctl, mrn, typ string) []byte {
	return []byte("MSH|^~\\&|PAS|HOSP|EMR|HOSP|20260102030405||" + typ + "|" + ctl + "|P|2.5\r" +
		"PID|1||" + mrn + "^^^HOSP^MR||Doe^Jane\r")
}

// The message browser's filters through the API: by MRN (the ordering
// key), MSH-10 (the dedupe key), message type, intake status and time,
// alone and together, paged; the type shows in each summary; a bad
// filter is a 400 naming it.
func TestAPIMessageSearch(t *testing.T) {
	forEachBackend(t, func(t *testing.T, be ixstore.Backend) {
		mllpAddr, archive := testutil.FreePort(t), t.TempDir()
		proj := project(t, map[string]string{
			"ductus.yaml": "partitions: 2\nscript: { isolates: 1 }\napi: { listen: \"127.0.0.1:0\" }\n",
			"interfaces/adt/interface.yaml": fmt.Sprintf(`
source: { type: mllp, listen: %q }
ordering_key: PID-3.1
dedupe: { key: MSH-10, window: 1h }
destinations:
  archive: { type: file, path: %q, name: "{{.ID}}.hl7" }
`, mllpAddr, archive),
			"interfaces/adt/transform.js": "function transform(msg) { return msg; }\n",
		})
		e := running(t, proj, be)
		testutil.Eventually(t, 10*time.Second, "the API to listen", func() bool { return e.APIAddr() != "" })
		base := "http://" + e.APIAddr()
		_, viewer := newToken(t, e, "viewer", access.Viewer)

		sent := []struct{ ctl, mrn, typ string }{
			{"S1", "M1", "ADT^A01"}, {"S2", "M2", "ADT^A08^ADT_A01"}, {"S3", "M1", "ORU^R01"},
			{"S4", "M1", "ADT^A08"}, {"S5", "M3", "ADT^A01"},
		}
		var mid time.Time
		for i, m := range sent {
			if i == 3 {
				time.Sleep(5 * time.Millisecond) // IDs are to the millisecond
				mid = time.Now()
				time.Sleep(5 * time.Millisecond)
			}
			if ack := sendOne(t, mllpAddr, hl7Typed(m.ctl, m.mrn, m.typ)); ack.Code != "AA" {
				t.Fatalf("%s: %s", m.ctl, ack.Code)
			}
		}
		// S1 again: a duplicate, stored for audit.
		if ack := sendOne(t, mllpAddr, hl7Typed("S1", "M1", "ADT^A01")); ack.Code != "AA" {
			t.Fatalf("S1 again: %s", ack.Code)
		}
		search := func(q string) string {
			t.Helper()
			var ctls []string
			next := ""
			for {
				var page api.MessagePage
				path := "/api/v1/interfaces/adt/messages?limit=2&" + q
				if next != "" {
					path += "&before=" + url.QueryEscape(next)
				}
				callJSON(t, base, viewer, "GET", path, "", 200, &page)
				for _, m := range page.Messages {
					c := *m.DedupeKey
					if m.Status == "duplicate" {
						c += "d"
					}
					ctls = append(ctls, c)
				}
				if page.Next == nil {
					return strings.Join(ctls, ",")
				}
				next = *page.Next
			}
		}
		since := url.QueryEscape(mid.UTC().Format(time.RFC3339Nano))
		for _, c := range []struct{ q, want string }{
			{"", "S1d,S5,S4,S3,S2,S1"},
			{"key=M1", "S1d,S4,S3,S1"},
			{"dedupe_key=S1", "S1d,S1"},
			{"type=" + url.QueryEscape("ADT^A08"), "S4,S2"},
			{"type=" + url.QueryEscape("ADT^A01") + "&key=M1", "S1d,S1"},
			{"status=duplicate", "S1d"},
			{"since=" + since, "S1d,S5,S4"},
			{"until=" + since, "S3,S2,S1"},
			{"since=" + since + "&key=M1", "S1d,S4"},
			{"type=" + url.QueryEscape("ADT^A99"), ""},
		} {
			if got := search(c.q); got != c.want {
				t.Errorf("?%s: %s, want %s", c.q, got, c.want)
			}
		}
		var page api.MessagePage
		callJSON(t, base, viewer, "GET", "/api/v1/interfaces/adt/messages?dedupe_key=S2", "", 200, &page)
		if len(page.Messages) != 1 || page.Messages[0].Type == nil || *page.Messages[0].Type != "ADT^A08" {
			t.Fatalf("S2's summary: %+v", page.Messages)
		}
		for q, says := range map[string]string{
			"status=sent":                        "status",
			"since=yesterday":                    "since",
			"since=" + since + "&until=" + since: "before until",
			"key=":                               "key",
		} {
			st, b := call(t, base, viewer, "GET", "/api/v1/interfaces/adt/messages?"+q, "")
			refused(t, "?"+q, st, b, 400, says)
		}
	})
}
