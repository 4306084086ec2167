package main

import (
	"context"
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/ductus/ductus/integration/api"
	"github.com/ductus/ductus/internal/testutil"
)

// ductus hotspots prints each destination's backlog, says when every lane
// is blocked, and lists the lanes with the message holding each; it asks
// the API with the token and the interface's name.
func TestHotspotsCmd(t *testing.T) {
	attempts, key, msg, lastErr := 7, "MRN-1", "0190a0b0-0000-7000-8000-000000000001", "HTTP 503"
	since := time.Now().Add(-90 * time.Second)
	rep := api.HotspotReport{Interface: "adt", Destinations: []api.DestinationHotspots{
		{Destination: "emr", Waiting: 42, LanesWaiting: 2, LanesBlocked: 2, ReceiverDown: true, Lanes: []api.Hotspot{
			{Lane: 3, Waiting: 40, Blocked: true, MessageId: &msg, Key: &key, Attempts: &attempts, LastError: &lastErr, Since: &since},
		}},
		{Destination: "archive", Waiting: 150, LanesWaiting: 2, Lanes: []api.Hotspot{{Lane: 1, Waiting: 149, Hot: true}}},
	}}
	var gotPath, gotAuth string
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		gotPath, gotAuth = r.URL.Path, r.Header.Get("Authorization")
		json.NewEncoder(w).Encode(rep)
	}))
	defer srv.Close()
	t.Setenv("DUCTUS_TOKEN", "dux_test")

	var out, errOut testutil.SyncBuffer
	if code := run(context.Background(), []string{"hotspots", "-api", srv.URL, "adt"}, &out, &errOut); code != 0 {
		t.Fatalf("exit %d: %s", code, errOut.String())
	}
	if gotPath != "/api/v1/interfaces/adt/hotspots" || gotAuth != "Bearer dux_test" {
		t.Fatalf("asked %s with %q", gotPath, gotAuth)
	}
	for _, want := range []string{
		"adt/emr: 42 waiting in 2 lanes, 2 blocked",
		"every lane is blocked: the receiver looks down",
		"3     40       blocked  " + msg + "  MRN-1  7         1m30s  HTTP 503",
		"adt/archive: 150 waiting in 2 lanes, 0 blocked",
		"1     149      hot  -",
	} {
		if !strings.Contains(out.String(), want) {
			t.Errorf("printed\n%s\nwithout %q", out.String(), want)
		}
	}
	if code := run(context.Background(), []string{"hotspots", "-api", srv.URL}, &out, &errOut); code != 2 || !strings.Contains(errOut.String(), "usage") {
		t.Fatalf("no interface: exit %d %s", code, errOut.String())
	}
}
