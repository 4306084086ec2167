package realtime

import (
	"bufio"
	"context"
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"slices"
	"strconv"
	"testing"
	"time"

	"github.com/ductus/ductus/actor"
	"github.com/ductus/ductus/internal/testutil/backendtest"
	"github.com/ductus/ductus/runtime/host"
)

// helperEnv makes the test binary a worker process (TestMain): it opens
// the database named by the JSON backendtest.Spec, asks "add" 1 to the actor
// RT_HELPER_ID RT_HELPER_N times, 50 ms apart, printing each Ask's return
// time (Unix ns), and exits.
const helperEnv = "RT_HELPER_SPEC"

func TestMain(m *testing.M) {
	if os.Getenv(helperEnv) != "" {
		if err := helperMain(); err != nil {
			fmt.Fprintln(os.Stderr, "helper:", err)
			os.Exit(1)
		}
		os.Exit(0)
	}
	code := m.Run()
	backendtest.DropAll()
	os.Exit(code)
}

func helperMain() error {
	var spec backendtest.Spec
	if err := json.Unmarshal([]byte(os.Getenv(helperEnv)), &spec); err != nil {
		return err
	}
	n, err := strconv.Atoi(os.Getenv("RT_HELPER_N"))
	if err != nil {
		return err
	}
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	be, err := spec.Open(ctx)
	if err != nil {
		return err
	}
	defer be.Close()
	h, err := host.New(host.Config{Backend: be, Registry: testRegistry(), Workers: 1})
	if err != nil {
		return err
	}
	if err := h.Start(ctx); err != nil {
		return err
	}
	defer h.Shutdown(context.Background())
	ref := actor.Ref{Type: tallyType, ID: os.Getenv("RT_HELPER_ID")}
	for i := 0; i < n; i++ {
		if _, err := h.Ask(ctx, ref, "add", 1); err != nil {
			return err
		}
		fmt.Println(time.Now().UnixNano())
		time.Sleep(50 * time.Millisecond)
	}
	return nil
}

// TestTwoProcesses: updates committed by a worker in another process reach
// this process's subscribers (NOTIFY on PostgreSQL, the signal table on
// MySQL). SQLite is one process, so it is not run there. The latency from
// the other process's Ask returning to the client's receipt is logged.
func TestTwoProcesses(t *testing.T) {
	for _, mk := range []struct {
		name string
		spec func(testing.TB) backendtest.Spec
	}{{"postgres", backendtest.Postgres}, {"mysql", backendtest.MySQL}} {
		t.Run(mk.name, func(t *testing.T) {
			spec := mk.spec(t)
			// This process only observes: a client-only host, with a
			// safety-net poll slow enough that the signal must do the work.
			h := startHost(t, spec.OpenT(t), func(c *host.Config) { c.NoWorkers = true; c.Workers = 0; c.PollInterval = 2 * time.Second })
			srv := startServer(t, h)
			ref := actor.Ref{Type: tallyType, ID: "xp"}
			c := dial(t, srv.url, nil)
			c.send(subscribeFrame(ref, token(t, ref), nil, "n"))
			c.expect(OpSnapshot, "")

			const n = 20
			spec2, _ := json.Marshal(spec)
			cmd := exec.Command(os.Args[0], "-test.run=^$")
			cmd.Env = append(os.Environ(), helperEnv+"="+string(spec2), "RT_HELPER_ID=xp", "RT_HELPER_N="+strconv.Itoa(n))
			cmd.Stderr = os.Stderr
			out, err := cmd.StdoutPipe()
			if err != nil {
				t.Fatal(err)
			}
			if err := cmd.Start(); err != nil {
				t.Fatal(err)
			}
			t.Cleanup(func() { _ = cmd.Process.Kill(); _ = cmd.Wait() })
			asked := make(chan int64, n)
			go func() {
				sc := bufio.NewScanner(out)
				for sc.Scan() {
					v, _ := strconv.ParseInt(sc.Text(), 10, 64)
					asked <- v
				}
				close(asked)
			}()
			var lat []time.Duration
			for i := 1; i <= n; {
				_, v := c.untilValue("n", i) // merged updates may skip values
				got := time.Now().UnixNano()
				for ; i <= v; i++ {
					if a, ok := <-asked; ok {
						lat = append(lat, time.Duration(got-a))
					}
				}
			}
			if err := cmd.Wait(); err != nil {
				t.Fatalf("worker process: %v", err)
			}
			slices.Sort(lat)
			t.Logf("%s: other process's Ask returned -> client received: p50 %v, max %v over %d updates",
				mk.name, lat[len(lat)/2].Round(time.Microsecond), lat[len(lat)-1].Round(time.Microsecond), len(lat))
		})
	}
}
