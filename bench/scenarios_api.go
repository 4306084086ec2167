package main

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"math/rand/v2"
	"net/http"
	"net/url"
	"os"
	goruntime "runtime"
	"strings"
	"time"

	"github.com/google/uuid"

	"github.com/ductus/ductus/integration/access"
	"github.com/ductus/ductus/integration/ixstore"
	"github.com/ductus/ductus/runtime/store"
)

// The operator API's scenarios (issue 15): real HTTP GETs over loopback
// to an engine's API, one request in flight, timed from sending the
// request to the last byte of the answer.

// apiYAML is ductus.yaml of a project whose operator API listens on a
// free loopback port (the rest as engineYAML).
func apiYAML(partitions int) string {
	return strings.Replace(engineYAML(partitions), "api: { listen: off }", `api: { listen: "127.0.0.1:0" }`, 1)
}

// apiFilters are the message browser's filters api_messages_page times,
// by the suffix of their figures.
func apiFilters() []string { return []string{"by_key", "by_dedupe_key", "by_status", "by_type"} }

// apiMessagesFigures names what apiMessagesPage prints.
func apiMessagesFigures() []string {
	out := []string{"api_messages_page_fill"}
	for _, f := range apiFilters() {
		out = append(out, "api_messages_page_p50_ms_"+f, "api_messages_page_p99_ms_"+f)
	}
	return out
}

// apiClient calls a running engine's operator API with an admin token.
type apiClient struct {
	base  string
	token string
	http  *http.Client
}

// newAPIClient waits for the engine's API to listen and makes an admin
// token for it straight in the engine's access store.
func newAPIClient(ctx context.Context, er *engineRun) (*apiClient, error) {
	deadline := time.Now().Add(time.Minute)
	for er.e.APIAddr() == "" {
		if time.Now().After(deadline) {
			return nil, errors.New("the operator API did not listen within a minute")
		}
		select {
		case <-ctx.Done():
			return nil, ctx.Err()
		case <-time.After(2 * time.Millisecond):
		}
	}
	by := &access.Principal{Name: "bench", Via: access.ViaCLI, Role: access.Admin, Perms: access.AllPerms}
	_, secret, err := er.e.Access().CreateToken(ctx, by, access.NewToken{Name: "bench", Role: access.Admin, Perms: access.AllPerms})
	if err != nil {
		return nil, fmt.Errorf("create the API token: %w", err)
	}
	return &apiClient{base: "http://" + er.e.APIAddr() + "/api/v1", token: secret, http: &http.Client{Timeout: time.Minute}}, nil
}

// get makes one GET of path (under /api/v1) and returns the answer's
// body, the time to its last byte, and an error for any status but 200.
func (c *apiClient) get(ctx context.Context, path string) ([]byte, time.Duration, error) {
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, c.base+path, nil)
	if err != nil {
		return nil, 0, err
	}
	req.Header.Set("Authorization", "Bearer "+c.token)
	start := time.Now()
	resp, err := c.http.Do(req)
	if err != nil {
		return nil, 0, fmt.Errorf("GET %s: %w", path, err)
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	took := time.Since(start)
	if err != nil {
		return nil, 0, fmt.Errorf("GET %s: %w", path, err)
	}
	if resp.StatusCode != http.StatusOK {
		return nil, 0, fmt.Errorf("GET %s: %s: %.200s", path, resp.Status, b)
	}
	return b, took, nil
}

// apiInterfaces is the latency of GET /interfaces on an engine running
// 1,001 MLLP interfaces (start_1001_interfaces' project) with nothing
// stored: every interface's state and per-destination counts in one page.
func apiInterfaces(ctx context.Context, r *runner) error {
	n := r.n(1001, 21)
	addrs, err := freeAddrs(n)
	if err != nil {
		return err
	}
	files := manyInterfaces(addrs)
	files["ductus.yaml"] = apiYAML(64)
	return r.withEngine(ctx, files, func(er *engineRun) error {
		c, err := newAPIClient(ctx, er)
		if err != nil {
			return err
		}
		warm, reqs := r.n(50, 3), r.n(1000, 10)
		lat := make([]time.Duration, 0, reqs)
		for i := 0; i < warm+reqs; i++ {
			b, took, err := c.get(ctx, "/interfaces")
			if err != nil {
				return err
			}
			if i == 0 {
				var page struct {
					Interfaces []json.RawMessage `json:"interfaces"`
				}
				if err := json.Unmarshal(b, &page); err != nil {
					return fmt.Errorf("GET /interfaces: %w", err)
				}
				if len(page.Interfaces) != n {
					return fmt.Errorf("GET /interfaces listed %d interfaces, not %d", len(page.Interfaces), n)
				}
			}
			if i >= warm {
				lat = append(lat, took)
			}
		}
		sortDurations(lat)
		r.print("api_interfaces_p50_ms", msAt(lat, 0.50), "ms", len(lat))
		r.print("api_interfaces_p99_ms", msAt(lat, 0.99), "ms", len(lat))
		return nil
	})
}

// apiFill is what fillMessages stored, for requests to pick existing
// values from.
type apiFill struct {
	mrns  []int32 // each message's MRN number, by message number
	types []string
}

// mrn is the ordering key of MRN number i.
func mrn(i int32) string { return fmt.Sprintf("MRN%06d", i) }

// controlID is the dedupe key (MSH-10) of message number i.
func controlID(i int) string { return fmt.Sprintf("MSG%08d", i) }

// fillMessages stores n messages of interface name straight through the
// engine store, batch messages a transaction: UUIDv7 IDs in increasing
// order, ordering keys over mrns MRNs, unique dedupe keys, 20 ADT types,
// 1% of them "duplicate" and the rest "pending". No deliveries: the
// lanes never see them, and the browser lists them all the same.
func fillMessages(ctx context.Context, er *engineRun, name string, n, mrns, batch int) (*apiFill, error) {
	f := &apiFill{mrns: make([]int32, n)}
	for t := 1; t <= 20; t++ {
		f.types = append(f.types, fmt.Sprintf("ADT^A%02d", t))
	}
	rng := rand.New(rand.NewPCG(15, 15))
	es := er.be.EngineStore()
	p := &progress{what: "messages stored", total: n}
	prev := ""
	for from := 0; from < n; from += batch {
		msgs := make([]ixstore.Message, 0, batch)
		for i := from; i < min(n, from+batch); i++ {
			id, err := uuid.NewV7()
			if err != nil {
				return nil, err
			}
			k := rng.Int32N(int32(mrns))
			f.mrns[i] = k
			typ := f.types[i%len(f.types)]
			m := ixstore.Message{
				ID: id.String(), Interface: name, ReceivedAt: time.Now().UTC(), Status: "pending",
				Key: mrn(k), Lane: int(k) % er.proj.Engine.Partitions, DedupeKey: controlID(i), Type: typ,
				Payload: fmt.Appendf(nil, "MSH|^~\\&|ADT|GHH|EMR|GHH|20240305101112||%s|%s|P|2.5.1\rPID|1||%s^^^GHH^MR||DOE^JANE\r",
					typ, controlID(i), mrn(k)),
			}
			if i%100 == 99 {
				m.Status, m.DuplicateOf = "duplicate", prev
			}
			prev = m.ID
			msgs = append(msgs, m)
		}
		if err := insertBatch(ctx, er.be, es, msgs); err != nil {
			return nil, fmt.Errorf("store messages %d to %d: %w", from, from+len(msgs), err)
		}
		p.at(from + len(msgs))
	}
	return f, nil
}

// insertBatch stores msgs in one transaction of the backend.
func insertBatch(ctx context.Context, be store.Backend, es ixstore.Store, msgs []ixstore.Message) error {
	tx, err := be.Begin(ctx, store.TxOptions{})
	if err != nil {
		return err
	}
	if err := es.MessageInsert(ctx, tx, &ixstore.MessageInsertParams{Messages: msgs}); err != nil {
		return errors.Join(err, tx.Rollback(ctx))
	}
	return tx.Commit(ctx)
}

// apiMessagesPage is the latency of the message browser's first page (50
// messages, newest first) over 1,000,000 stored messages of one
// interface, filtered by ordering key (MRN), dedupe key (MSH-10), status
// (duplicate, 1% of them) and type (one of 20), each request with a
// random stored value. It also prints the fill's rate.
func apiMessagesPage(ctx context.Context, r *runner) error {
	n, mrns := r.n(1_000_000, 2000), r.n(100_000, 200)
	addr, err := freeAddr()
	if err != nil {
		return err
	}
	files := mllpProject(16, addr, fileDest("out"))
	files["ductus.yaml"] = apiYAML(16)
	return r.withEngine(ctx, files, func(er *engineRun) error {
		c, err := newAPIClient(ctx, er)
		if err != nil {
			return err
		}
		start := time.Now()
		f, err := fillMessages(ctx, er, "adt", n, mrns, 1000)
		if err != nil {
			return err
		}
		fill := time.Since(start)
		fmt.Fprintf(os.Stderr, "    %d messages stored in %s\n", n, fill.Round(time.Millisecond))
		r.print("api_messages_page_fill", float64(n)/fill.Seconds(), "msg/s", n)
		// The fill's garbage and the database's write-back are not the
		// reads' cost: let them settle before timing.
		goruntime.GC()
		time.Sleep(time.Duration(r.n(5000, 10)) * time.Millisecond)
		rng := rand.New(rand.NewPCG(1, 5))
		query := map[string]func() string{
			"by_key":        func() string { return "key=" + mrn(f.mrns[rng.IntN(n)]) },
			"by_dedupe_key": func() string { return "dedupe_key=" + controlID(rng.IntN(n)) },
			"by_status":     func() string { return "status=duplicate" },
			"by_type":       func() string { return "type=" + url.QueryEscape(f.types[rng.IntN(len(f.types))]) },
		}
		warm, reqs := r.n(50, 3), r.n(1000, 20)
		for _, name := range apiFilters() {
			lat := make([]time.Duration, 0, reqs)
			for i := 0; i < warm+reqs; i++ {
				path := "/interfaces/adt/messages?limit=50&" + query[name]()
				b, took, err := c.get(ctx, path)
				if err != nil {
					return err
				}
				var page struct {
					Messages []json.RawMessage `json:"messages"`
				}
				if err := json.Unmarshal(b, &page); err != nil {
					return fmt.Errorf("GET %s: %w", path, err)
				}
				if len(page.Messages) == 0 {
					return fmt.Errorf("GET %s found no message", path)
				}
				if i >= warm {
					lat = append(lat, took)
				}
			}
			sortDurations(lat)
			r.print("api_messages_page_p50_ms_"+name, msAt(lat, 0.50), "ms", len(lat))
			r.print("api_messages_page_p99_ms_"+name, msAt(lat, 0.99), "ms", len(lat))
		}
		return nil
	})
}
