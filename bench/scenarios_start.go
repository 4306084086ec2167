package main

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"syscall"
	"time"

	"github.com/ductus/ductus/integration/engine"
	"github.com/ductus/ductus/integration/ixstore"
	"github.com/ductus/ductus/integration/script"
)

// oruToJSON is a lab feed's transform: an ORU^R01 to the JSON document an
// EMR's HTTP API takes (the same as integration/script's BenchmarkTransformORU).
const oruToJSON = `
function transform(msg, meta) {
  if (msg.type !== "ORU^R01") filter("not a result: " + msg.type);
  const mrn = msg.get("PID-3.1");
  if (mrn === "") quarantine("PID-3.1 (MRN) is empty");
  const results = msg.segments("OBX").map((obx) => ({
    code: obx.get("3.1"),
    name: obx.get("3.2"),
    system: obx.get("3.3"),
    type: obx.get("2"),
    value: obx.get("2") === "NM" ? Number(obx.get("5")) : obx.get("5"),
    units: obx.get("6.1"),
    range: obx.get("7"),
    flag: obx.get("8") || null,
    status: obx.get("11"),
    observedAt: obx.get("14") || null,
  }));
  return {
    id: meta.id,
    receivedAt: meta.receivedAt,
    patient: {
      mrn,
      family: msg.get("PID-5.1"),
      given: msg.get("PID-5.2"),
      birthDate: msg.get("PID-7"),
      sex: msg.get("PID-8"),
    },
    order: {
      placer: msg.get("OBR-2.1"),
      filler: msg.get("OBR-3.1"),
      test: { code: msg.get("OBR-4.1"), name: msg.get("OBR-4.2") },
      collectedAt: msg.get("OBR-7"),
      provider: msg.get("OBR-16.2") + ", " + msg.get("OBR-16.3"),
    },
    results,
    notes: msg.segments("NTE").map((n) => n.get("3")),
  };
}
`

// oruMessage is an ORU^R01 with n OBX segments (a chemistry panel).
func oruMessage(n int) string {
	analytes := []struct{ code, name, units, rng string }{
		{"2345-7", "Glucose", "mg/dL", "70-99"}, {"2160-0", "Creatinine", "mg/dL", "0.6-1.3"},
		{"3094-0", "Urea nitrogen", "mg/dL", "7-20"}, {"2951-2", "Sodium", "mmol/L", "135-145"},
		{"2823-3", "Potassium", "mmol/L", "3.5-5.1"}, {"2075-0", "Chloride", "mmol/L", "98-107"},
		{"2028-9", "Carbon dioxide", "mmol/L", "22-29"}, {"17861-6", "Calcium", "mg/dL", "8.6-10.3"},
	}
	var b strings.Builder
	b.WriteString("MSH|^~\\&|LAB|GOOD HEALTH HOSPITAL|EMR|GOOD HEALTH HOSPITAL|20240305101112||ORU^R01^ORU_R01|LAB000123|P|2.5.1\r")
	b.WriteString("PID|1||MRN12345^^^GHH^MR~999-99-9999^^^USSSA^SS||DOE^JANE^Q^^MS||19700412|F|||123 MAIN ST^^SPRINGFIELD^IL^62701^USA||(217)555-0100\r")
	b.WriteString("PV1|1|O|LAB^^^GHH||||1234^WELBY^MARCUS^^^DR|||||||||||V0001^^^GHH^VN\r")
	b.WriteString("ORC|RE|ORD448811^EMR|LAB998877^LAB||CM\r")
	b.WriteString("OBR|1|ORD448811^EMR|LAB998877^LAB|80048^BASIC METABOLIC PANEL^CPT|||20240305083000|||||||||1234^WELBY^MARCUS||||||20240305100500|||F\r")
	for i := 0; i < n; i++ {
		a := analytes[i%len(analytes)]
		flag := ""
		if i%5 == 0 {
			flag = "H"
		}
		fmt.Fprintf(&b, "OBX|%d|NM|%s^%s^LN||%d.%d|%s^%s^UCUM|%s|%s|||F|||20240305095%d\r", i+1, a.code, a.name, 80+i, i%10, a.units, a.units, a.rng, flag, i%10)
	}
	b.WriteString("NTE|1|L|Specimen slightly hemolyzed \\T\\ recollection not required.\r")
	return b.String()
}

// transformPerCore is transforms/s of the ORU^R01-to-JSON transform (20
// OBX) on one isolate called from one goroutine: what one core does, the
// payload into V8, the parse, the transform, JSON out and back to Go.
func transformPerCore(ctx context.Context, r *runner) error {
	h, err := script.NewHost(script.Config{Isolates: 1, Logger: slog.New(slog.DiscardHandler)})
	if err != nil {
		return err
	}
	defer h.Close()
	if err := h.Load(ctx, script.Interface{Name: "lab", Files: []script.File{{Name: "transform.js", Source: []byte(oruToJSON)}}}); err != nil {
		return err
	}
	in := script.Input{
		Format: script.FormatHL7v2, OutputFormat: script.FormatJSON, Payload: []byte(oruMessage(20)),
		Meta: script.Meta{ID: "123456", ReceivedAt: time.Date(2024, 3, 5, 10, 11, 12, 0, time.UTC), Destination: "emr-api"},
	}
	call := func() error {
		res, err := h.Call(ctx, "lab", "", in)
		if err == nil && res.Kind != script.KindOutput {
			err = fmt.Errorf("%v: %s", res.Kind, res.Reason)
		}
		return err
	}
	for i := 0; i < 200; i++ { // warm: V8 compiles the hot functions
		if err := call(); err != nil {
			return err
		}
	}
	d := time.Duration(r.n(10, 1)) * time.Second
	n, start := 0, time.Now()
	for time.Since(start) < d {
		if err := call(); err != nil {
			return err
		}
		n++
	}
	r.print("transform_per_core", float64(n)/time.Since(start).Seconds(), "transforms/s", n)
	return nil
}

// manyInterfaces is a project of one interface per address: an MLLP
// source (the config gives every listening source its own address, as a
// site with many feeds has), keyed on PID-3.1, a pass-through transform
// and a file destination.
func manyInterfaces(addrs []string) map[string]string {
	files := map[string]string{"ductus.yaml": engineYAML(64)}
	for i, a := range addrs {
		d := fmt.Sprintf("interfaces/i%04d/", i)
		files[d+"interface.yaml"] = fmt.Sprintf("source: { type: mllp, listen: %q }\nordering_key: PID-3.1\n"+
			"destinations:\n  out: { type: file, path: %s, name: \"{{.ID}}.hl7\" }\n", a, outFolder(i))
		files[d+"transform.js"] = passThrough
	}
	return files
}

// outFolder is interface i's destination folder, relative to the project.
func outFolder(i int) string { return fmt.Sprintf("out/i%04d", i) }

// freeAddrs returns n distinct free loopback addresses: all are held open
// until the last is chosen, so the kernel cannot hand out one port twice.
func freeAddrs(n int) ([]string, error) {
	var out []string
	for i := 0; i < n; i++ {
		ln, err := net.Listen("tcp", "127.0.0.1:0")
		if err != nil {
			return nil, err
		}
		defer ln.Close()
		out = append(out, ln.Addr().String())
	}
	return out, nil
}

// start1001 times `ductus run`'s path for a project of 1,001 interfaces in
// a child process of this binary (-start-project): from starting the
// process to its sources listening, and the child's resident memory then.
// A child of its own, so the harness's memory and warm caches do not count.
// It starts three times on one database: on a new one (the migrations
// create every table, the destinations' folders are made); again on what
// the first left (a restart, the usual start of a running site); and once
// more to send every interface one message and read the resident memory
// when each has been delivered (a busy site: every interface has run its
// transform, which binds it in a V8 context of the isolate that ran it).
func start1001(ctx context.Context, r *runner) error {
	n := r.n(1001, 21)
	addrs, err := freeAddrs(n)
	if err != nil {
		return err
	}
	dir, err := os.MkdirTemp("", "ductus-bench-start")
	if err != nil {
		return err
	}
	defer os.RemoveAll(dir)
	if err := writeProject(dir, manyInterfaces(addrs)); err != nil {
		return err
	}
	return r.fresh(ctx, nil, func(_ backend, dsn string) error {
		for _, name := range []string{"start_1001_interfaces", "start_1001_interfaces_restart"} {
			ready, kb, err := r.startChild(dir, dsn, strings.TrimPrefix(name, "start_1001_interfaces"), nil)
			if err != nil {
				return fmt.Errorf("%s: %w", name, err)
			}
			r.print(name+"_s", ready.Seconds(), "s", n)
			r.print(name+"_mb", float64(kb)/1024, "MB", n)
		}
		var busy int
		_, _, err := r.startChild(dir, dsn, "_busy", func(pid int) error {
			var err error
			busy, err = sendEach(ctx, dir, addrs, pid)
			return err
		})
		if err != nil {
			return fmt.Errorf("start_1001_interfaces_busy: %w", err)
		}
		r.print("start_1001_interfaces_busy_mb", float64(busy)/1024, "MB", n)
		return nil
	})
}

// sendEach sends one message to each interface of the project in dir (at
// addrs) and waits until every one has been written to its destination's
// folder; then it reads the resident memory of the engine's process pid.
func sendEach(ctx context.Context, dir string, addrs []string, pid int) (int, error) {
	msgs, err := hl7Pool(1, 1, "busy")
	if err != nil {
		return 0, err
	}
	for _, a := range addrs {
		if _, err := mllpLoad(ctx, a, 1, msgs, 1, nil); err != nil {
			return 0, fmt.Errorf("sending to %s: %w", a, err)
		}
	}
	waiting := make([]int, len(addrs)) // the interfaces with nothing delivered yet
	for i := range waiting {
		waiting[i] = i
	}
	err = waitFor(ctx, "one message delivered to each interface", len(addrs), func() int {
		waiting = slices.DeleteFunc(waiting, func(i int) bool {
			f, _ := os.ReadDir(filepath.Join(dir, outFolder(i)))
			return len(f) > 0
		})
		return len(addrs) - len(waiting)
	})
	if err != nil {
		return 0, err
	}
	return vmRSS(strconv.Itoa(pid))
}

// startChild runs the project in dir in a child process until it is ready,
// then (with while) runs while against it, then stops it: the time to
// ready and the child's resident KiB then. With -cpuprofile F the child
// writes its profile to F.child plus suffix.
func (r *runner) startChild(dir, dsn, suffix string, while func(pid int) error) (time.Duration, int, error) {
	args := []string{"-start-project", dir, "-backend", r.o.backend, "-dsn", dsn, "-durability", r.o.durability}
	if r.o.cpuprofile != "" {
		// The engine starts in the child: its profile is the one to read.
		args = append(args, "-cpuprofile", r.o.cpuprofile+".child"+suffix)
	}
	c := exec.Command(os.Args[0], args...)
	c.SysProcAttr = workerAttr()
	c.Stderr = os.Stderr
	out, err := c.StdoutPipe()
	if err != nil {
		return 0, 0, err
	}
	start := time.Now()
	if err := c.Start(); err != nil {
		return 0, 0, err
	}
	line := make(chan string, 1)
	go func() {
		s, _ := bufio.NewReader(out).ReadString('\n')
		line <- s
	}()
	var got string
	select {
	case got = <-line:
	case <-time.After(5 * time.Minute):
	}
	ready := time.Since(start)
	var werr error
	if while != nil && strings.HasPrefix(got, "READY ") {
		werr = while(c.Process.Pid)
	}
	_ = c.Process.Signal(syscall.SIGTERM)
	werr = errors.Join(werr, waitWorker(c, workerGrace))
	kb, perr := strconv.Atoi(strings.TrimSpace(strings.TrimPrefix(got, "READY ")))
	if !strings.HasPrefix(got, "READY ") || perr != nil {
		return 0, 0, errors.Join(fmt.Errorf("the child did not get ready (said %q)", got), werr)
	}
	return ready, kb, werr
}

// startMain is the child of start1001: it runs the project in dir as
// `ductus run` would (over the run's database, already made by the
// parent), prints "READY <VmRSS in kB>" once the sources listen, and stops
// on SIGTERM.
func startMain(ctx context.Context, e env, o options) error {
	proj, err := loadProject(o.startProject)
	if err != nil {
		return err
	}
	be, err := e.open(ctx, o.dsn, nil)
	if err != nil {
		return err
	}
	defer be.Close()
	ibe, ok := be.(ixstore.Backend)
	if !ok {
		return fmt.Errorf("the %s adapter has no engine store", o.backend)
	}
	eng, err := engine.New(ctx, proj, engine.Options{Backend: ibe, Logger: slog.New(slog.DiscardHandler), Version: "bench"})
	if err != nil {
		return err
	}
	defer eng.Close()
	done := make(chan error, 1)
	go func() { done <- eng.Run(ctx) }()
	if err := waitListening(ctx, eng, proj, done); err != nil {
		return err
	}
	kb, err := vmRSS("self")
	if err != nil {
		return err
	}
	fmt.Printf("READY %d\n", kb)
	return <-done
}

// vmRSS is a process's resident set in kB (VmRSS in /proc/<pid>/status;
// pid "self" for this one; Linux only: elsewhere the scenario fails).
func vmRSS(pid string) (int, error) {
	path := "/proc/" + pid + "/status"
	b, err := os.ReadFile(path)
	if err != nil {
		return 0, err
	}
	for _, l := range strings.Split(string(b), "\n") {
		if f := strings.Fields(l); len(f) >= 2 && f[0] == "VmRSS:" {
			return strconv.Atoi(f[1])
		}
	}
	return 0, errors.New("no VmRSS in " + path)
}
