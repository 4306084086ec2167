package host

import (
	"context"
	"errors"
	"path/filepath"
	"testing"

	"github.com/ductus/ductus/actor"
	"github.com/ductus/ductus/adapters/sqlite"
	"github.com/ductus/ductus/runtime/store"
)

// failFirstEnqueue fails the first MailboxEnqueue with fail, after
// running it for real when commit is set (a commit whose answer was lost).
type failFirstEnqueue struct {
	store.Backend
	fail   error
	commit bool
	calls  int
}

func (f *failFirstEnqueue) MailboxEnqueue(ctx context.Context, tx store.Tx, p *store.MailboxEnqueueParams) ([]store.EnqueueResult, error) {
	f.calls++
	if f.calls > 1 {
		return f.Backend.MailboxEnqueue(ctx, tx, p)
	}
	if f.commit {
		if _, err := f.Backend.MailboxEnqueue(ctx, tx, p); err != nil {
			return nil, err
		}
	}
	return nil, f.fail
}

// TestEnqueueRetriesOnlyWhatCannotDuplicate: a Tell is retried after a
// failure that certainly rolled back, or when it carries an idempotency
// key; a failure of unknown outcome (the connection lost with the commit
// on the wire) reaches the caller as a transient error, and the message
// is in the mailbox once, never twice.
func TestEnqueueRetriesOnlyWhatCannotDuplicate(t *testing.T) {
	rolledBack := &store.Error{Backend: "test", Op: "enqueue", Transient: true, RolledBack: true, Err: errors.New("deadlock")}
	ambiguous := &store.Error{Backend: "test", Op: "enqueue", Transient: true, Err: errors.New("connection lost")}
	permanent := &store.Error{Backend: "test", Op: "enqueue", Err: errors.New("syntax")}
	cases := []struct {
		name      string
		fail      error
		commit    bool // the failed attempt committed
		key       string
		wantErr   bool
		wantCalls int
	}{
		{"rolled back, no key: retried", rolledBack, false, "", false, 2},
		{"unknown outcome, no key: not retried", ambiguous, true, "", true, 1},
		{"unknown outcome, keyed: retried, the duplicate found", ambiguous, true, "k1", false, 2},
		{"permanent: not retried", permanent, false, "", true, 1},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			ctx := context.Background()
			be, err := sqlite.Open(ctx, sqlite.Config{Path: filepath.Join(t.TempDir(), "t.db")})
			if err != nil {
				t.Fatal(err)
			}
			defer be.Close()
			f := &failFirstEnqueue{Backend: be, fail: c.fail, commit: c.commit}
			reg := actor.NewRegistry()
			reg.MustRegister(&actor.Type[struct{}]{Name: "t", Messages: map[string]actor.Handler[struct{}]{
				"m": actor.Message(func(*actor.Context, *struct{}, int) (int, error) { return 0, nil }),
			}})
			h, err := New(Config{Backend: f, Registry: reg, NoWorkers: true})
			if err != nil {
				t.Fatal(err)
			}
			r := actor.Ref{Type: "t", ID: "x"}
			var opts []actor.TellOption
			if c.key != "" {
				opts = append(opts, actor.WithIdempotencyKey(c.key))
			}
			_, err = h.Tell(ctx, r, "m", 1, opts...)
			if (err != nil) != c.wantErr || f.calls != c.wantCalls {
				t.Fatalf("Tell = %v after %d attempts; want error %v after %d", err, f.calls, c.wantErr, c.wantCalls)
			}
			if err != nil && errors.Is(c.fail, store.ErrTransient) && !store.IsTransient(err) {
				t.Fatalf("the caller's error is no longer transient: %v", err)
			}
			want := 1
			if c.wantErr && !c.commit {
				want = 0
			}
			info, err := be.ActorGet(ctx, r)
			got := 0
			if err == nil {
				got = info.Unfinished
			} else if !errors.Is(err, actor.ErrNotFound) {
				t.Fatal(err)
			}
			if got != want {
				t.Fatalf("%d messages in the mailbox, want %d", got, want)
			}
		})
	}
}
