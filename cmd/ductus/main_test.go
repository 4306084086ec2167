package main

import (
	"bytes"
	"context"
	"fmt"
	"io/fs"
	"net"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/ductus/ductus/internal/testutil"
)

const exampleProject = "../../examples/hospital"

func TestValidateTheExampleProject(t *testing.T) {
	var stdout, stderr testutil.SyncBuffer
	if code := run(context.Background(), []string{"validate", exampleProject}, &stdout, &stderr); code != 0 {
		t.Fatalf("ductus validate %s exited %d\n%s%s", exampleProject, code, stdout.String(), stderr.String())
	}
	if !strings.Contains(stdout.String(), "4 interface(s), OK") {
		t.Fatalf("stdout %q", stdout.String())
	}
	if s := stderr.String(); s != "" {
		t.Fatalf("validate printed warnings or problems for the example:\n%s", s)
	}
}

func TestBadCommandLines(t *testing.T) {
	cases := []struct {
		args []string
		code int
		want string
	}{
		{nil, 2, "usage: ductus"},
		{[]string{"frobnicate"}, 2, `unknown command "frobnicate"`},
		{[]string{"validate"}, 2, "usage: ductus validate <project-dir>"},
		{[]string{"validate", "/nonexistent/project"}, 1, "ductus validate:"},
	}
	for _, c := range cases {
		var stdout, stderr testutil.SyncBuffer
		if code := run(context.Background(), c.args, &stdout, &stderr); code != c.code || !strings.Contains(stderr.String(), c.want) {
			t.Errorf("ductus %v = %d, stderr %q; want %d and …%s…", c.args, code, stderr.String(), c.code, c.want)
		}
	}
}

// files lists the regular files under dir (recursively), dot-files left out.
func files(dir string) []string {
	var out []string
	_ = filepath.WalkDir(dir, func(p string, d fs.DirEntry, err error) error {
		if err == nil && !d.IsDir() && !strings.HasPrefix(d.Name(), ".") {
			out = append(out, p)
		}
		return nil
	})
	return out
}

func lines(path string) int {
	b, _ := os.ReadFile(path)
	return bytes.Count(b, []byte("\n"))
}

// TestDevWalkthrough runs `ductus dev` on a copy of the example project
// (its addresses moved to free ports through the environment, as the
// project's ${env:...:-default} substitutions allow) and does what the
// README's walkthrough says: ductus send with the printed arguments, the
// sample ADT files, the sample ORU file dropped into the inbox. Everything
// must arrive: at the stand-in EMR, in the archive, as notifications and
// at the stand-in lab API (which checks the token from the secrets file).
func TestDevWalkthrough(t *testing.T) {
	readme, err := os.ReadFile("../../README.md")
	if err != nil {
		t.Fatal(err)
	}
	sendArgs := fmt.Sprintf(devSendArgs, "127.0.0.1:2575")
	if !strings.Contains(string(readme), "send "+sendArgs) {
		t.Fatalf("the README's walkthrough does not send with %q, which this test runs", sendArgs)
	}

	dir := t.TempDir()
	if err := copyProject(os.DirFS(exampleProject), dir); err != nil {
		t.Fatal(err)
	}
	adt, emr, lab, apiAddr := testutil.FreePort(t), testutil.FreePort(t), testutil.FreePort(t), testutil.FreePort(t)
	_, emrPort, _ := net.SplitHostPort(emr)
	t.Setenv("API_LISTEN", apiAddr)
	t.Setenv("ADT_LISTEN", adt)
	t.Setenv("EMR_HOST", "127.0.0.1")
	t.Setenv("EMR_PORT", emrPort)
	t.Setenv("LAB_API_URL", "http://"+lab)

	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	var stdout, stderr testutil.SyncBuffer
	done := make(chan int, 1)
	go func() { done <- run(ctx, []string{"dev", "-dir", dir}, &stdout, &stderr) }()
	defer func() {
		cancel()
		if code := <-done; code != 0 {
			t.Errorf("ductus dev exited %d\n%s", code, stderr.String())
		}
	}()
	testutil.Eventually(t, 60*time.Second, "ductus dev to listen on "+adt, func() bool {
		select {
		case code := <-done:
			done <- code
			t.Fatalf("ductus dev exited %d\n%s", code, stderr.String())
		default:
		}
		c, err := net.Dial("tcp", adt)
		if err == nil {
			c.Close()
		}
		return err == nil
	})
	if !strings.Contains(stdout.String(), "ductus send "+fmt.Sprintf(devSendArgs, adt)) {
		t.Fatalf("ductus dev printed\n%s\nwithout the send command", stdout.String())
	}

	var sendOut, sendErr testutil.SyncBuffer
	if code := run(ctx, append([]string{"send"}, strings.Fields(fmt.Sprintf(devSendArgs, adt))...), &sendOut, &sendErr); code != 0 {
		t.Fatalf("ductus send exited %d\n%s%s", code, sendOut.String(), sendErr.String())
	}
	samples := []string{filepath.Join(dir, "samples", "adt_a01.hl7"), filepath.Join(dir, "samples", "adt_a08.hl7")}
	if code := run(ctx, append([]string{"send", "-addr", adt}, samples...), &sendOut, &sendErr); code != 0 {
		t.Fatalf("ductus send of the samples exited %d\n%s%s", code, sendOut.String(), sendErr.String())
	}
	oru, err := os.ReadFile(filepath.Join(dir, "samples", "oru_r01.hl7"))
	if err != nil {
		t.Fatal(err)
	}
	tmp := filepath.Join(dir, "inbox", "lab", ".oru_r01.hl7.tmp")
	if err := os.WriteFile(tmp, oru, 0o644); err != nil {
		t.Fatal(err)
	}
	if err := os.Rename(tmp, filepath.Join(dir, "inbox", "lab", "oru_r01.hl7")); err != nil {
		t.Fatal(err)
	}

	out := filepath.Join(dir, "out")
	results := bytes.Count(bytes.ReplaceAll(oru, []byte("\n"), []byte("\r")), []byte("\rMSH|")) + 1
	testutil.Eventually(t, 60*time.Second, "22 messages at the stand-in EMR", func() bool { return lines(filepath.Join(out, "emr-received.hl7")) == 22 })
	testutil.Eventually(t, 30*time.Second, "22 archived messages", func() bool { return len(files(filepath.Join(out, "archive"))) == 22 })
	testutil.Eventually(t, 30*time.Second, "notifications", func() bool { return len(files(filepath.Join(out, "notifications"))) > 0 })
	testutil.Eventually(t, 30*time.Second, fmt.Sprintf("%d results at the stand-in lab API", results), func() bool {
		return len(files(filepath.Join(out, "lab-api"))) == results
	})
	testutil.Eventually(t, 30*time.Second, "the lab file moved to done", func() bool {
		_, err := os.Stat(filepath.Join(dir, "inbox", "lab", "done", "oru_r01.hl7"))
		return err == nil
	})
	emrOut, _ := os.ReadFile(filepath.Join(out, "emr-received.hl7"))
	if bytes.Contains(emrOut, []byte("ORU^R01")) {
		t.Fatal("an ORU^R01 reached the EMR through the ADT feed")
	}
	if !bytes.Contains(emrOut, []byte("|EMR|")) {
		t.Fatal("the EMR's messages lack the transform's MSH-6")
	}

	// The printed export line works: ductus status through the API, with
	// the development admin's token.
	_, export, ok := strings.Cut(stdout.String(), "export ")
	if !ok {
		t.Fatalf("ductus dev printed\n%s\nwithout the API's export line", stdout.String())
	}
	export, _, _ = strings.Cut(export, "\n")
	if !regexp.MustCompile(`sign in: +account dev, password [0-9a-f]{24} `).MatchString(stdout.String()) {
		t.Fatalf("ductus dev printed\n%s\nwithout how to sign in", stdout.String())
	}
	for _, kv := range strings.Fields(export) {
		k, v, _ := strings.Cut(kv, "=")
		t.Setenv(k, v)
	}
	if os.Getenv("DUCTUS_API") != "http://"+apiAddr || !strings.HasPrefix(os.Getenv("DUCTUS_TOKEN"), "dux_") {
		t.Fatalf("the export line %q", export)
	}
	var st, stErr testutil.SyncBuffer
	if code := run(ctx, []string{"status"}, &st, &stErr); code != 0 {
		t.Fatalf("ductus status exited %d\n%s%s", code, st.String(), stErr.String())
	}
	for _, want := range []string{"adt", "lab", "emr", "archive", "running"} {
		if !strings.Contains(st.String(), want) {
			t.Fatalf("ductus status printed\n%s\nwithout %q", st.String(), want)
		}
	}

	// ductus messages finds the A08 sample by type; ductus show prints it
	// with its deliveries and payload.
	var ms, msErr testutil.SyncBuffer
	if code := run(ctx, []string{"messages", "-type", "ADT^A08", "-since", "1h", "-limit", "500", "adt"}, &ms, &msErr); code != 0 {
		t.Fatalf("ductus messages exited %d\n%s%s", code, ms.String(), msErr.String())
	}
	rows := strings.Split(strings.TrimSpace(ms.String()), "\n")
	if len(rows) < 2 || !strings.HasPrefix(rows[0], "ID") || !strings.Contains(rows[1], "ADT^A08") {
		t.Fatalf("ductus messages -type ADT^A08 printed\n%s", ms.String())
	}
	for _, r := range rows[1:] {
		if !strings.Contains(r, "ADT^A08") {
			t.Fatalf("a row of another type: %q", r)
		}
	}
	id := strings.Fields(rows[1])[0]
	var sh, shErr testutil.SyncBuffer
	if code := run(ctx, []string{"show", "-payload", id}, &sh, &shErr); code != 0 {
		t.Fatalf("ductus show exited %d\n%s%s", code, sh.String(), shErr.String())
	}
	for _, want := range []string{"message   " + id, "type      ADT^A08", "DESTINATION", "emr", "MSH|"} {
		if !strings.Contains(sh.String(), want) {
			t.Fatalf("ductus show printed\n%s\nwithout %q", sh.String(), want)
		}
	}
	if code := run(ctx, []string{"messages", "-since", "yesterday", "adt"}, &ms, &msErr); code != 2 || !strings.Contains(msErr.String(), "yesterday") {
		t.Fatalf("a bad -since: %d %s", code, msErr.String())
	}

	// ductus hotspots: everything above was delivered, so nothing waits;
	// an unknown interface is the API's 404, naming it.
	testutil.Eventually(t, 30*time.Second, "ductus hotspots adt: nothing waiting", func() bool {
		var hs, hsErr testutil.SyncBuffer
		return run(ctx, []string{"hotspots", "adt"}, &hs, &hsErr) == 0 && hs.String() == "adt: nothing is waiting\n"
	})
	var hs, hsErr testutil.SyncBuffer
	if code := run(ctx, []string{"hotspots", "nope"}, &hs, &hsErr); code == 0 || !strings.Contains(hsErr.String(), `"nope"`) {
		t.Fatalf("ductus hotspots nope: %d %s", code, hsErr.String())
	}

	// ductus drain closes the gates and returns once everything sent
	// above is delivered; -cancel opens them again.
	for _, c := range []struct {
		args []string
		want string
	}{
		{[]string{"drain", "-every", "50ms"}, "drained"},
		{[]string{"drain", "-cancel"}, "the gates are open"},
	} {
		var out, errOut testutil.SyncBuffer
		if code := run(ctx, c.args, &out, &errOut); code != 0 || !strings.Contains(out.String(), c.want) {
			t.Fatalf("ductus %v exited %d\n%s%s\nwant %q", c.args, code, out.String(), errOut.String(), c.want)
		}
	}
	var dOut, dErr testutil.SyncBuffer
	if code := run(ctx, []string{"drain", "-cancel"}, &dOut, &dErr); code != 1 || !strings.Contains(dErr.String(), "not draining") {
		t.Fatalf("ductus drain -cancel with open gates exited %d\n%s%s", code, dOut.String(), dErr.String())
	}

	// The operator's actions from a shell: a pause shows in status until
	// the resume; bad arguments and unknown messages say what is wrong.
	for _, c := range []struct {
		args []string
		code int
		want string // in stdout (code 0) or stderr
	}{
		{[]string{"pause", "-reason", "EMR upgrade", "adt", "emr"}, 0, "paused by"},
		{[]string{"status"}, 0, "EMR upgrade"},
		{[]string{"pause", "-reason", "again", "adt", "emr"}, 1, "paused already"},
		{[]string{"resume", "adt", "emr"}, 0, "resumed"},
		{[]string{"resume", "adt", "emr"}, 1, "not paused"},
		{[]string{"pause", "adt", "emr"}, 2, "usage: ductus pause"},
		{[]string{"pause", "-reason", "x", "adt", "nope"}, 1, "nope"},
		{[]string{"resend"}, 2, "usage: ductus resend"},
		{[]string{"resend", "0190-nope"}, 1, "0190-nope"},
		{[]string{"dismiss", "0190-nope"}, 2, "usage: ductus dismiss"},
		{[]string{"dismiss", "-reason", "x", "0190-nope"}, 1, "0190-nope"},
	} {
		var out, errOut testutil.SyncBuffer
		code := run(ctx, c.args, &out, &errOut)
		got := out.String()
		if c.code != 0 {
			got = errOut.String()
		}
		if code != c.code || !strings.Contains(got, c.want) {
			t.Fatalf("ductus %v exited %d (want %d)\n%s%s\nwant %q", c.args, code, c.code, out.String(), errOut.String(), c.want)
		}
	}
	var sOut, sErr testutil.SyncBuffer
	if code := run(ctx, []string{"status"}, &sOut, &sErr); code != 0 || strings.Contains(sOut.String(), "EMR upgrade") {
		t.Fatalf("ductus status after the resume exited %d\n%s%s", code, sOut.String(), sErr.String())
	}
}
