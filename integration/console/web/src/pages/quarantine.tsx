// The quarantine across interfaces (GET /quarantine), newest first, paged.
// Operators select deliveries and resend or dismiss them in bulk, after a
// confirmation that says how many and which, through the API's bulk
// operations (POST /messages/resend, /messages/dismiss: all or nothing).
import { useState } from "preact/hooks";

import { api, atLeast, enc, errorText, query, type Principal, type Schemas } from "../api/client";
import { navigate } from "../router";
import { ErrorBox, Field, Notice, Time, useAsync, useTitle } from "../ui";

type Page = Schemas["QuarantinePage"];
type Item = Schemas["QuarantinedDelivery"];
type Bulk = { kind: "resend" | "dismiss"; items: Item[]; reason: string };

const itemKey = (q: Item) => q.message_id + "\u0000" + q.destination;

export function QuarantinePage({ me, params }: { me: Principal; params: URLSearchParams }) {
  useTitle("Quarantine");
  const iface = params.get("interface") ?? "";
  const before = params.get("before") ?? "";
  const page = useAsync(() => api<Page>("GET", "/quarantine" + query({ interface: iface, before })), [iface, before]);
  const [f, setF] = useState(iface);
  const [selected, setSelected] = useState<Set<string>>(new Set());
  const [reason, setReason] = useState("");
  const [confirming, setConfirming] = useState<Bulk>();
  const [outcome, setOutcome] = useState<{ ok: string[]; failed: string[]; kind: Bulk["kind"]; count: number }>();
  const [busy, setBusy] = useState(false);
  const operator = atLeast(me.role, "operator");
  const items = page.data?.items ?? [];
  const chosen = items.filter((q) => selected.has(itemKey(q)));
  const toggle = (q: Item, on: boolean) => {
    const next = new Set(selected);
    if (on) next.add(itemKey(q));
    else next.delete(itemKey(q));
    setSelected(next);
  };
  const allOn = items.length > 0 && chosen.length === items.length;

  // One bulk call (all or nothing) per set of destinations: usually one,
  // as the API's destinations apply to every message named.
  const run = async (b: Bulk) => {
    setBusy(true);
    const byMessage = new Map<string, string[]>();
    for (const q of b.items) byMessage.set(q.message_id, [...(byMessage.get(q.message_id) ?? []), q.destination]);
    const groups = new Map<string, { ids: string[]; destinations: string[] }>();
    for (const [id, dests] of byMessage) {
      const destinations = [...dests].sort();
      const key = destinations.join("\u0000");
      const g = groups.get(key) ?? { ids: [], destinations };
      g.ids.push(id);
      groups.set(key, g);
    }
    const ok: string[] = [];
    const failed: string[] = [];
    for (const g of groups.values()) {
      const label = `${g.ids.length} message(s) to ${g.destinations.join(", ")}`;
      try {
        if (b.kind === "resend") {
          await api("POST", "/messages/resend", { ids: g.ids, destinations: g.destinations });
        } else {
          await api("POST", "/messages/dismiss", { ids: g.ids, destinations: g.destinations, reason: b.reason });
        }
        ok.push(label);
      } catch (e) {
        failed.push(`${label}: ${errorText(e)} (none of them was ${b.kind === "resend" ? "resent" : "dismissed"})`);
      }
    }
    setOutcome({ ok, failed, kind: b.kind, count: b.items.length });
    setConfirming(undefined);
    setSelected(new Set());
    setBusy(false);
    page.reload();
  };

  return (
    <section>
      <h1>Quarantine</h1>
      <p>Deliveries a destination holds for an operator. Open a message to see why, or select several to act on them.</p>
      <form class="inline filters" onSubmit={(e) => { e.preventDefault(); navigate("/quarantine" + query({ interface: f.trim() })); }}>
        <Field label="Interface" id="q-interface">
          <input id="q-interface" value={f} onInput={(e) => setF(e.currentTarget.value)} />
        </Field>
        <button type="submit">Filter</button>
      </form>
      <ErrorBox error={page.error} />
      {outcome && (
        <div class="panel" role="status" data-testid="bulk-outcome">
          {outcome.ok.length > 0 && (
            <p class="ok">{outcome.kind === "resend" ? "Resent" : "Dismissed"}: {outcome.ok.join("; ")}.</p>
          )}
          {outcome.failed.length > 0 && (
            <div class="error">
              <p>Refused:</p>
              <ul>{outcome.failed.map((x) => <li key={x}>{x}</li>)}</ul>
            </div>
          )}
        </div>
      )}
      {page.data?.truncated && <Notice>The quarantine holds more than one listing reads: only part of it is listed.</Notice>}
      {page.data && items.length === 0 && <Notice>Nothing is quarantined{iface ? ` in ${iface}` : ""}.</Notice>}
      {items.length > 0 && (
        <table class="data" data-testid="quarantine">
          <thead>
            <tr>
              {operator && (
                <th scope="col">
                  <input type="checkbox" aria-label="Select every delivery on this page" checked={allOn}
                    onChange={(e) => setSelected(e.currentTarget.checked ? new Set(items.map(itemKey)) : new Set())} />
                </th>
              )}
              <th scope="col">Message</th>
              <th scope="col">Interface</th>
              <th scope="col">Destination</th>
              <th scope="col">Stopped</th>
              <th scope="col" class="num">Attempts</th>
              <th scope="col">Reason</th>
              <th scope="col">Quarantined</th>
            </tr>
          </thead>
          <tbody>
            {items.map((q) => (
              <tr key={itemKey(q)}>
                {operator && (
                  <td>
                    <input type="checkbox" aria-label={`Select ${q.message_id} to ${q.destination}`}
                      checked={selected.has(itemKey(q))} onChange={(e) => toggle(q, e.currentTarget.checked)} />
                  </td>
                )}
                <th scope="row"><a class="mono" href={"/messages/" + enc(q.message_id)}>{q.message_id}</a></th>
                <td><a href={"/interfaces/" + enc(q.interface)}>{q.interface}</a></td>
                <td>{q.destination}</td>
                <td>{q.stopped_at === "lane" ? "before the send" : "at the send"}</td>
                <td class="num">{q.attempts}</td>
                <td class="wrap">{q.reason}</td>
                <td><Time at={q.quarantined_at} /></td>
              </tr>
            ))}
          </tbody>
        </table>
      )}
      {operator && items.length > 0 && !confirming && (
        <div class="panel" aria-labelledby="bulk-title">
          <h2 id="bulk-title">Selected: {chosen.length}</h2>
          <div class="row">
            <button type="button" disabled={chosen.length === 0}
              onClick={() => setConfirming({ kind: "resend", items: chosen, reason: "" })}>
              Resend selected
            </button>
          </div>
          <form class="inline" onSubmit={(e) => { e.preventDefault(); setConfirming({ kind: "dismiss", items: chosen, reason }); }}>
            <Field label="Reason to dismiss the selected" id="bulk-reason">
              <input id="bulk-reason" required maxLength={500} value={reason} onInput={(e) => setReason(e.currentTarget.value)} />
            </Field>
            <button type="submit" disabled={chosen.length === 0}>Dismiss selected</button>
          </form>
        </div>
      )}
      {confirming && (
        <div class="panel secret" role="alertdialog" aria-labelledby="confirm-title" aria-describedby="confirm-list" data-testid="confirm">
          <h2 id="confirm-title">
            {confirming.kind === "resend" ? "Resend" : "Dismiss"} {confirming.items.length} deliver{confirming.items.length === 1 ? "y" : "ies"}?
          </h2>
          {confirming.kind === "dismiss" && <p>Reason: {confirming.reason}</p>}
          <ul id="confirm-list">
            {confirming.items.map((q) => (
              <li key={itemKey(q)}><span class="mono">{q.message_id}</span> to {q.destination} ({q.interface})</li>
            ))}
          </ul>
          <div class="row">
            <button type="button" class="primary" disabled={busy} onClick={() => run(confirming)} autoFocus>
              {confirming.kind === "resend" ? "Resend" : "Dismiss"} {confirming.items.length}
            </button>
            <button type="button" disabled={busy} onClick={() => setConfirming(undefined)}>Cancel</button>
          </div>
        </div>
      )}
      <nav class="pager" aria-label="Pages">
        {before && <a href={"/quarantine" + query({ interface: iface })}>Newest</a>}
        {page.data?.next && <a href={"/quarantine" + query({ interface: iface, before: page.data.next })}>Older</a>}
      </nav>
    </section>
  );
}
