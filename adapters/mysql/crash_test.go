package mysql

import (
	"bufio"
	"context"
	"database/sql"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/ductus/ductus/runtime/crashtest"
	"github.com/ductus/ductus/runtime/scenariotest"
	"github.com/ductus/ductus/runtime/store"
)

func openDSN(ctx context.Context, dsn string) (store.Backend, error) {
	return Open(ctx, Config{DSN: dsn, Logger: quiet})
}

// TestMain runs the tests, or, re-executed by the crash test, a worker.
func TestMain(m *testing.M) { crashtest.Main(m, openDSN) }

// TestCrash runs the real-process crash test on the server (4 workers,
// 200 counters, 20,000 increments, SIGKILLs and pauses past the lease),
// while another session kills the database connections of the worker
// processes in the middle of their transactions (KILL CONNECTION).
func TestCrash(t *testing.T) {
	if testing.Short() {
		t.Skip("the crash test runs in full mode only")
	}
	dsn := newDatabase(t)
	db := admin(t)
	name := dsn[strings.LastIndex(dsn, "/")+1:]
	if i := strings.IndexByte(name, '?'); i >= 0 {
		name = name[:i]
	}
	var killed atomic.Int64
	crashtest.Run(t, crashtest.Config{DSN: dsn, Open: openDSN, Chaos: func(ctx context.Context, pids func() []int) {
		for ctx.Err() == nil {
			time.Sleep(150 * time.Millisecond)
			if killWorkerTransaction(ctx, db, name, pids()) {
				killed.Add(1)
			}
		}
	}})
	t.Logf("killed %d worker connections in the middle of a transaction", killed.Load())
	if killed.Load() == 0 {
		t.Fatal("no worker connection was killed mid-transaction")
	}
}

// TestCrashEffects SIGKILLs workers while their ordered effects post to an
// external record: every effect reaches it once per ID, in staging order.
func TestCrashEffects(t *testing.T) {
	if testing.Short() {
		t.Skip("the crash test runs in full mode only")
	}
	crashtest.RunEffects(t, crashtest.Config{DSN: newDatabase(t), Open: openDSN})
}

// killWorkerTransaction kills one connection of a worker process that has
// a transaction open, found by matching the processes' TCP ports with the
// server's process list.
func killWorkerTransaction(ctx context.Context, db *sql.DB, database string, pids []int) bool {
	ports := map[string]bool{}
	for _, pid := range pids {
		for _, p := range localPorts(pid) {
			ports[p] = true
		}
	}
	if len(ports) == 0 {
		return false
	}
	rows, err := db.QueryContext(ctx, `SELECT p.ID, p.HOST FROM information_schema.PROCESSLIST p
		JOIN information_schema.INNODB_TRX x ON x.trx_mysql_thread_id = p.ID WHERE p.DB = ?`, database)
	if err != nil {
		return false
	}
	var victim int64
	for rows.Next() {
		var id int64
		var host string
		if rows.Scan(&id, &host) == nil {
			if i := strings.LastIndexByte(host, ':'); i >= 0 && ports[host[i+1:]] && victim == 0 {
				victim = id
			}
		}
	}
	rows.Close()
	if victim == 0 {
		return false
	}
	_, err = db.ExecContext(ctx, fmt.Sprintf("KILL CONNECTION %d", victim))
	return err == nil
}

// localPorts lists the local TCP ports of a process's sockets (Linux).
func localPorts(pid int) []string {
	fds, err := os.ReadDir(fmt.Sprintf("/proc/%d/fd", pid))
	if err != nil {
		return nil
	}
	inodes := map[string]bool{}
	for _, fd := range fds {
		link, err := os.Readlink(filepath.Join(fmt.Sprintf("/proc/%d/fd", pid), fd.Name()))
		if err == nil && strings.HasPrefix(link, "socket:[") {
			inodes[strings.TrimSuffix(strings.TrimPrefix(link, "socket:["), "]")] = true
		}
	}
	var out []string
	for _, table := range []string{"tcp", "tcp6"} {
		f, err := os.Open(fmt.Sprintf("/proc/%d/net/%s", pid, table))
		if err != nil {
			continue
		}
		sc := bufio.NewScanner(f)
		for sc.Scan() {
			fields := strings.Fields(sc.Text())
			if len(fields) < 10 || !inodes[fields[9]] {
				continue
			}
			local := fields[1]
			if i := strings.LastIndexByte(local, ':'); i >= 0 {
				if port, err := strconv.ParseUint(local[i+1:], 16, 16); err == nil {
					out = append(out, strconv.FormatUint(port, 10))
				}
			}
		}
		f.Close()
	}
	return out
}

// TestDeadlockHunt runs the scenario suite's concurrent scenarios 20 times
// in a row: no deadlock may surface as an error to a caller.
func TestDeadlockHunt(t *testing.T) {
	if testing.Short() {
		t.Skip("the deadlock hunt runs in full mode only")
	}
	admin(t)
	var retries atomic.Int64
	for i := 0; i < 20; i++ {
		t.Run(strconv.Itoa(i), func(t *testing.T) {
			scenariotest.RunConcurrent(t, func(t *testing.T) store.Backend {
				b := openBackend(t, Config{})
				t.Cleanup(func() { retries.Add(b.Stats().Retries) })
				return b
			})
		})
	}
	t.Logf("the adapter ran %d transactions again after a deadlock or lock wait timeout (none reached a caller)", retries.Load())
}
