// An interface: its sources and destinations, with pause and resume (a
// reason) for operators.
import { useState } from "preact/hooks";

import { api, atLeast, enc, query, type Destination, type Interface, type Principal, type Schemas } from "../api/client";
import { useLiveState } from "../events";
import { Badge, ErrorBox, Notice, Time, useAsync, useTitle } from "../ui";

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
