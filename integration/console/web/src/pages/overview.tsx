// Every interface with its state, throughput and each destination's counts
// and oldest pending age, live from the event stream; the drain state with
// its buttons for operators.
import { useState } from "preact/hooks";

import { api, atLeast, enc, type Drain, type Interface, type Principal, type Schemas } from "../api/client";
import { useLiveState } from "../events";
import { Age, Badge, ErrorBox, Notice, Time, useAsync, useNow, useTitle } from "../ui";

export function Overview({ me }: { me: Principal }) {
  useTitle("Overview");
  const live = useLiveState();
  // Until the first event arrives (or if the stream cannot be opened), the
  // plain reads.
  const first = useAsync(
    () => Promise.all([api<{ interfaces: Interface[] }>("GET", "/interfaces"), api<Drain>("GET", "/drain")]),
    [],
  );
  const [drainOverride, setDrainOverride] = useState<Drain>();
  const interfaces = live.state?.interfaces ?? first.data?.[0].interfaces;
  const drain = drainOverride ?? live.state?.drain ?? first.data?.[1];
  return (
    <section>
      <div class="title-row">
        <h1>Overview</h1>
        <span class={"live " + (live.connected ? "on" : "off")} role="status" data-testid="live">
          {live.connected ? "Live" : "Not live: reconnecting…"}
        </span>
      </div>
      <ErrorBox error={first.error} />
      {drain && <DrainPanel me={me} drain={drain} onChange={setDrainOverride} />}
      {interfaces && interfaces.length === 0 && <Notice>This project has no interfaces.</Notice>}
      {interfaces && interfaces.length > 0 && (
        <table class="data">
          <caption class="sr-only">Interfaces and their destinations</caption>
          <thead>
            <tr>
              <th scope="col">Interface</th>
              <th scope="col">State</th>
              <th scope="col">Destination</th>
              <th scope="col" class="num">Pending</th>
              <th scope="col" class="num">
                Oldest pending <span class="small muted">age</span>
              </th>
              <th scope="col" class="num">Quarantined</th>
              <th scope="col">Paused</th>
              <th scope="col" class="num">
                Sent <span class="small muted">since start</span>
              </th>
              <th scope="col" class="num">
                Latency <span class="small muted">p50 / p95</span>
              </th>
              <th scope="col">Messages</th>
            </tr>
          </thead>
          <tbody>
            {interfaces.map((ix) =>
              (ix.destinations.length ? ix.destinations : [undefined]).map((d, i) => (
                <tr key={ix.name + "/" + (d?.name ?? "")} class={i === 0 ? "group-start" : ""}>
                  {i === 0 && (
                    <>
                      <th scope="row" rowSpan={Math.max(1, ix.destinations.length)}>
                        <a href={"/interfaces/" + enc(ix.name)}>{ix.name}</a>
                        <div class="muted small">{ix.format}</div>
                        <Sparkline name={ix.name} throughput={ix.throughput} />
                      </th>
                      <td rowSpan={Math.max(1, ix.destinations.length)}>
                        <Badge status={ix.state} />
                      </td>
                    </>
                  )}
                  {d ? (
                    <>
                      <td>
                        {d.name} <span class="muted small">{d.type}</span>
                      </td>
                      <td class="num" data-testid={`pending-${ix.name}-${d.name}`}>
                        {d.pending}
                      </td>
                      <td class="num">
                        <Age at={d.oldest_pending_at} testid={`oldest-${ix.name}-${d.name}`} />
                      </td>
                      <td class="num" data-testid={`quarantined-${ix.name}-${d.name}`}>
                        {d.quarantined > 0 ? (
                          <a href={"/quarantine?interface=" + enc(ix.name)} class="warn-text">
                            {d.quarantined}
                          </a>
                        ) : (
                          d.quarantined
                        )}
                      </td>
                      <td>{d.paused ? <span title={d.paused.reason}>paused by {d.paused.by}</span> : "—"}</td>
                      <td class="num" data-testid={`sent-${ix.name}-${d.name}`}
                        title={d.since_start ? `${d.since_start.filtered} filtered, ${d.since_start.quarantined} quarantined since this engine started` : undefined}>
                        {d.since_start ? d.since_start.sent : "—"}
                      </td>
                      <td class="num">{latency(d.since_start?.latency_p50_ms)} / {latency(d.since_start?.latency_p95_ms)}</td>
                    </>
                  ) : (
                    <td colSpan={7} class="muted">
                      no destinations
                    </td>
                  )}
                  {i === 0 && (
                    <td rowSpan={Math.max(1, ix.destinations.length)}>
                      <a href={"/interfaces/" + enc(ix.name) + "/messages"}>Browse</a>
                    </td>
                  )}
                </tr>
              )),
            )}
          </tbody>
        </table>
      )}
      {!interfaces && !first.error && <p role="status">Loading…</p>}
    </section>
  );
}

function DrainPanel({ me, drain, onChange }: { me: Principal; drain: Drain; onChange: (d?: Drain) => void }) {
  const [error, setError] = useState<unknown>();
  const [busy, setBusy] = useState(false);
  const act = async (method: "POST" | "DELETE") => {
    if (method === "POST" && !confirm("Close this engine's gates? MLLP listeners close and HTTP sources answer 503 until the drain is stopped.")) return;
    setBusy(true);
    setError(undefined);
    try {
      onChange(await api<Drain>(method, "/drain"));
      // The event stream takes over again at its next event.
      setTimeout(() => onChange(undefined), 1500);
    } catch (e) {
      setError(e);
    } finally {
      setBusy(false);
    }
  };
  return (
    <div class="panel" aria-labelledby="drain-title">
      <h2 id="drain-title">Drain</h2>
      {drain.draining ? (
        <p data-testid="drain-state">
          <Badge status={drain.drained ? "drained" : "draining"} /> since <Time at={drain.since} />: {drain.in_flight} in
          flight, {drain.pending} pending, {drain.paused_pending} in paused destinations
          {drain.stop_when_drained ? "; the engine stops once drained" : ""}.
        </p>
      ) : (
        <p data-testid="drain-state">The gates are open: the engine takes messages.</p>
      )}
      {atLeast(me.role, "operator") &&
        (drain.draining ? (
          <button type="button" disabled={busy} onClick={() => act("DELETE")}>
            Stop the drain
          </button>
        ) : (
          <button type="button" disabled={busy} onClick={() => act("POST")}>
            Start a drain
          </button>
        ))}
      <ErrorBox error={error} />
    </div>
  );
}

function latency(ms?: number): string {
  if (ms === undefined) return "—";
  return ms < 1000 ? `${Math.round(ms)} ms` : `${(ms / 1000).toFixed(1)} s`;
}

// Sparkline is an interface's sends a minute over the last hour (and,
// fainter, what it received), as this engine process counted them
// (Interface.throughput, absent when the hour had nothing). Between two
// updates of the state it moves on with the clock: the minutes since the
// figures' end are shown empty.
function Sparkline({ name, throughput }: { name: string; throughput?: Schemas["Throughput"] }) {
  const now = useNow(15000);
  const hour = new Array<number>(60).fill(0);
  const sent = throughput ? current(throughput.sent, throughput, now) : hour;
  const received = throughput ? current(throughput.received, throughput, now) : hour;
  const total = (xs: number[]) => xs.reduce((a, b) => a + b, 0);
  const peak = Math.max(0, ...sent);
  const max = Math.max(1, peak, ...received);
  const w = 120;
  const h = 24;
  const points = (xs: number[]) =>
    xs.map((v, i) => `${((i / Math.max(1, xs.length - 1)) * w).toFixed(1)},${(h - 1 - (v / max) * (h - 2)).toFixed(1)}`).join(" ");
  const label = `Sent in the last hour: ${total(sent)} (peak ${peak} a minute); received: ${total(received)}`;
  return (
    <svg class="spark" width={w} height={h} viewBox={`0 0 ${w} ${h}`} role="img" aria-label={label} data-testid={"spark-" + name}>
      <title>{label}</title>
      <polyline class="spark-received" points={points(received)} fill="none" stroke="currentColor" stroke-width="1" stroke-dasharray="2 2" />
      <polyline class="spark-sent" points={points(sent)} fill="none" stroke="currentColor" stroke-width="1.5" />
    </svg>
  );
}

// current shifts a series of buckets ending at t.until to end now: the
// buckets that have passed since are dropped from the front, zeros added.
function current(xs: number[], t: Schemas["Throughput"], now: number): number[] {
  const span = (t.bucket_seconds || 60) * 1000;
  const late = now - Date.parse(t.until);
  const k = late > 0 ? Math.ceil(late / span) : 0;
  if (k <= 0 || Number.isNaN(k)) return xs;
  if (k >= xs.length) return xs.map(() => 0);
  return [...xs.slice(k), ...new Array<number>(k).fill(0)];
}
