// An interface: its sources and destinations, with pause and resume (a
// reason) for operators; where its backlog is stuck (hotspots); its recent
// errors.
import { useEffect, useRef, useState } from "preact/hooks";

import { api, atLeast, enc, query, type Destination, type Interface, type Principal, type Schemas } from "../api/client";
import { useLiveState } from "../events";
import { Age, Badge, ErrorBox, Notice, Time, useAsync, useTitle } from "../ui";

export function InterfacePage({ me, name }: { me: Principal; name: string }) {
  useTitle("Interface " + name);
  const live = useLiveState();
  const first = useAsync(() => api<{ interfaces: Interface[] }>("GET", "/interfaces"), [name]);
  const list = live.state?.interfaces ?? first.data?.interfaces;
  const ix = list?.find((i) => i.name === name);
  return (
    <section>
      <p class="crumbs">
        <a href="/">Overview</a> / {name}
      </p>
      <div class="title-row">
        <h1>Interface {name}</h1>
        {ix && <Badge status={ix.state} />}
      </div>
      <ErrorBox error={first.error} />
      {list && !ix && <p class="error">There is no interface {name}.</p>}
      {ix && (
        <>
          <p>
            Format <strong>{ix.format}</strong>. <a href={"/interfaces/" + enc(name) + "/messages"}>Browse its messages</a>
            {" · "}
            <a href={"/quarantine?interface=" + enc(name)}>its quarantine</a>
          </p>
          {ix.last_runaway && <p class="error">The last runaway script: {ix.last_runaway}</p>}
          <h2>Sources</h2>
          <ul>
            {ix.sources.map((s) => (
              <li key={s}>{s}</li>
            ))}
          </ul>
          <h2>Destinations</h2>
          <table class="data">
            <thead>
              <tr>
                <th scope="col">Destination</th>
                <th scope="col">Type</th>
                <th scope="col" class="num">Pending</th>
                <th scope="col" class="num">
                  Oldest pending <span class="small muted">age</span>
                </th>
                <th scope="col" class="num">Quarantined</th>
                <th scope="col">Paused</th>
                {atLeast(me.role, "operator") && <th scope="col">Action</th>}
              </tr>
            </thead>
            <tbody>
              {ix.destinations.map((d) => (
                <DestinationRow key={d.name} me={me} ix={name} d={d} />
              ))}
            </tbody>
          </table>
          <Hotspots name={name} destinations={ix.destinations} />
          <RecentErrors name={name} />
        </>
      )}
    </section>
  );
}

function DestinationRow({ me, ix, d }: { me: Principal; ix: string; d: Destination }) {
  const [reason, setReason] = useState("");
  const [error, setError] = useState<unknown>();
  const [busy, setBusy] = useState(false);
  const path = `/interfaces/${enc(ix)}/destinations/${enc(d.name)}/pause`;
  const act = async (e: Event) => {
    e.preventDefault();
    setBusy(true);
    setError(undefined);
    try {
      if (d.paused) await api("DELETE", path);
      else await api("POST", path, { reason });
      setReason("");
    } catch (x) {
      setError(x);
    } finally {
      setBusy(false);
    }
  };
  const id = `pause-${d.name}`;
  return (
    <tr>
      <th scope="row">{d.name}</th>
      <td>{d.type}</td>
      <td class="num">{d.pending}</td>
      <td class="num">
        <Age at={d.oldest_pending_at} testid={`oldest-${d.name}`} />
      </td>
      <td class="num">{d.quarantined}</td>
      <td>
        {d.paused ? (
          <>
            by {d.paused.by}, <Time at={d.paused.at} />: {d.paused.reason}
          </>
        ) : (
          "—"
        )}
      </td>
      {atLeast(me.role, "operator") && (
        <td>
          <form class="inline" onSubmit={act}>
            {!d.paused && (
              <>
                <label for={id} class="sr-only">
                  Why pause {d.name}
                </label>
                <input id={id} placeholder="Reason" required maxLength={500} value={reason}
                  onInput={(e) => setReason(e.currentTarget.value)} />
              </>
            )}
            <button type="submit" disabled={busy}>
              {d.paused ? "Resume" : "Pause"}
            </button>
          </form>
          <ErrorBox error={error} />
        </td>
      )}
    </tr>
  );
}

// Hotspots is where the interface's backlog is stuck, per destination
// with a backlog (GET /interfaces/{name}/hotspots): the lanes held by a
// failing send, with that message, its key and its last error, and a lane
// holding most of the backlog. It is read again when the live state's
// pending counts change (at most every 3 s: on a busy interface they change
// with every state event), and every 5 s while something waits and the
// page is visible (a blocked send's attempts and error change on their
// own).
function Hotspots({ name, destinations }: { name: string; destinations: Destination[] }) {
  const signature = destinations.map((d) => `${d.name}:${d.pending}:${d.quarantined}:${d.oldest_pending_at ?? ""}`).join(" ");
  const waiting = destinations.some((d) => d.pending > 0);
  const [poll, setPoll] = useState(0);
  const last = useRef(Date.now());
  const first = useRef(true);
  useEffect(() => {
    if (first.current) {
      first.current = false; // the first read is useAsync's own
      return;
    }
    const t = setTimeout(() => setPoll((n) => n + 1), Math.max(0, last.current + 3000 - Date.now()));
    return () => clearTimeout(t);
  }, [signature]);
  useEffect(() => {
    if (!waiting) return;
    const t = setInterval(() => {
      if (document.visibilityState === "visible" && Date.now() - last.current >= 3000) setPoll((n) => n + 1);
    }, 5000);
    return () => clearInterval(t);
  }, [waiting]);
  const q = useAsync(() => {
    last.current = Date.now();
    return api<Schemas["HotspotReport"]>("GET", `/interfaces/${enc(name)}/hotspots`);
  }, [name, poll]);
  const report = q.data?.interface === name ? q.data : undefined;
  return (
    <section aria-labelledby="hotspots-title" data-testid="hotspots">
      <h2 id="hotspots-title">Hotspots</h2>
      <ErrorBox error={q.error} />
      {!report && !q.error && <p class="muted">Loading…</p>}
      {report && report.destinations.length === 0 && <Notice>Nothing is waiting.</Notice>}
      {report?.destinations.map((d) => (
        <DestinationHotspots key={d.destination} d={d} />
      ))}
    </section>
  );
}

function DestinationHotspots({ d }: { d: Schemas["DestinationHotspots"] }) {
  const id = "hotspots-" + d.destination;
  const lanes = (n: number) => (n === 1 ? "1 lane" : `${n} lanes`);
  return (
    <div data-testid={id}>
      <h3 id={id + "-title"}>{d.destination}</h3>
      <p data-testid={id + "-summary"}>
        {d.waiting} waiting in {lanes(d.lanes_waiting)}; {d.lanes_blocked === 0 ? "no lane" : lanes(d.lanes_blocked)} blocked.
      </p>
      {d.receiver_down && (
        <p class="error" role="alert" data-testid={id + "-down"}>
          Every lane is blocked: the receiver looks down.
        </p>
      )}
      {d.lanes.length === 0 ? (
        <p class="muted">No lane is blocked, and none holds most of the backlog.</p>
      ) : (
        <div class="scroll">
          <table class="data">
            <caption class="sr-only">Lanes of {d.destination} that are blocked or hold most of its backlog</caption>
            <thead>
              <tr>
                <th scope="col" class="num">Lane</th>
                <th scope="col" class="num">Waiting</th>
                <th scope="col">State</th>
                <th scope="col">Held by message</th>
                <th scope="col">Key</th>
                <th scope="col" class="num">Attempts</th>
                <th scope="col">Last error</th>
                <th scope="col">Since</th>
              </tr>
            </thead>
            <tbody>
              {d.lanes.map((l) => (
                <tr key={l.lane} data-testid={`lane-${d.destination}-${l.lane}`}>
                  <th scope="row" class="num">{l.lane}</th>
                  <td class="num">{l.waiting}</td>
                  <td>
                    {l.blocked && <Badge status="blocked" />} {l.hot && <Badge status="hot" />}
                  </td>
                  <td>{l.message_id ? <a class="mono" href={"/messages/" + enc(l.message_id)}>{l.message_id}</a> : "—"}</td>
                  <td class="mono">{l.key ?? "—"}</td>
                  <td class="num">{l.attempts ?? "—"}</td>
                  <td class="wrap">{l.last_error ?? "—"}</td>
                  <td>
                    <Time at={l.since} />
                    {l.since && (
                      <span class="muted small">
                        {" "}
                        (<Age at={l.since} /> ago)
                      </span>
                    )}
                  </td>
                </tr>
              ))}
            </tbody>
          </table>
        </div>
      )}
    </div>
  );
}

// RecentErrors is the interface's newest quarantined deliveries with their
// reasons (GET /quarantine?interface=...).
function RecentErrors({ name }: { name: string }) {
  const q = useAsync(() => api<Schemas["QuarantinePage"]>("GET", "/quarantine" + query({ interface: name, limit: 10 })), [name]);
  return (
    <>
      <h2>Recent errors</h2>
      <ErrorBox error={q.error} />
      {q.data && q.data.items.length === 0 && <Notice>Nothing of {name} is quarantined.</Notice>}
      {q.data && q.data.items.length > 0 && (
        <table class="data" data-testid="recent-errors">
          <thead>
            <tr>
              <th scope="col">Quarantined</th>
              <th scope="col">Destination</th>
              <th scope="col">Message</th>
              <th scope="col">Reason</th>
            </tr>
          </thead>
          <tbody>
            {q.data.items.map((x) => (
              <tr key={x.message_id + "/" + x.destination}>
                <td><Time at={x.quarantined_at} /></td>
                <td>{x.destination}</td>
                <td><a class="mono" href={"/messages/" + enc(x.message_id)}>{x.message_id}</a></td>
                <td class="wrap">{x.reason}</td>
              </tr>
            ))}
          </tbody>
        </table>
      )}
      {q.data?.next && <p><a href={"/quarantine" + query({ interface: name })}>All of its quarantine</a></p>}
    </>
  );
}
