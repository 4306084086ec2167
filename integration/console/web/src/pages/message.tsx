// A message: its keys, every delivery with its status, attempts and last
// error; the payload (raw and parsed HL7) for the payloads permission;
// resend and dismiss for operators.
import { useEffect, useState } from "preact/hooks";

import { api, ApiError, atLeast, enc, type Message, type MessagePayload, type Principal, type Schemas } from "../api/client";
import { CSVTable, parseCSV, prettyJSON } from "../formats";
import { diffHL7, fieldName, isHL7 } from "../hl7";
import { Badge, ErrorBox, Field, Notice, Time, useAsync, useTitle } from "../ui";

export function MessagePage({ me, id }: { me: Principal; id: string }) {
  useTitle("Message " + id);
  const msg = useAsync(() => api<Message>("GET", "/messages/" + enc(id)), [id]);
  const m = msg.data;
  // Follow a message while a delivery is pending (a resend, a retry),
  // until it settles.
  useEffect(() => {
    if (!m || m.settled !== "pending") return;
    const t = setTimeout(msg.reload, 1000);
    return () => clearTimeout(t);
  }, [m]);
  return (
    <section>
      <p class="crumbs">
        <a href="/">Overview</a>
        {m && (
          <>
            {" / "}
            <a href={"/interfaces/" + enc(m.message.interface)}>{m.message.interface}</a>
            {" / "}
            <a href={"/interfaces/" + enc(m.message.interface) + "/messages"}>messages</a>
          </>
        )}
        {" / "}
        {id}
      </p>
      <div class="title-row">
        <h1>
          Message <span class="mono">{id}</span>
        </h1>
        {m && <Badge status={m.settled} />}
      </div>
      <ErrorBox error={msg.error} />
      {msg.loading && !m && <p role="status">Loading…</p>}
      {m && (
        <>
          <dl class="keys">
            <dt>Interface</dt>
            <dd>{m.message.interface}</dd>
            <dt>Received</dt>
            <dd><Time at={m.message.received_at} /></dd>
            <dt>Type</dt>
            <dd>{m.message.type ?? "—"}</dd>
            <dt>Intake</dt>
            <dd>{m.message.status}</dd>
            <dt>Ordering key</dt>
            <dd>{m.message.ordering_key ?? "—"}{m.message.lane !== undefined ? ` (lane ${m.message.lane})` : ""}</dd>
            <dt>Dedupe key</dt>
            <dd>{m.message.dedupe_key ?? "—"}</dd>
            {m.message.duplicate_of && (
              <>
                <dt>Duplicate of</dt>
                <dd><a href={"/messages/" + enc(m.message.duplicate_of)}>{m.message.duplicate_of}</a></dd>
              </>
            )}
            {m.message.routed_from && (
              <>
                <dt>Routed from</dt>
                <dd><a href={"/messages/" + enc(m.message.routed_from)}>{m.message.routed_from}</a></dd>
              </>
            )}
            {m.message.edited_from && (
              <>
                <dt>Corrected copy of</dt>
                <dd><a href={"/messages/" + enc(m.message.edited_from)}>{m.message.edited_from}</a></dd>
              </>
            )}
            <dt>Origin</dt>
            <dd>{m.message.origin ?? "—"}</dd>
            <dt>Size</dt>
            <dd>{m.message.size} bytes</dd>
          </dl>
          <h2>Deliveries</h2>
          <table class="data" data-testid="deliveries">
            <thead>
              <tr>
                <th scope="col">Destination</th>
                <th scope="col">Status</th>
                <th scope="col" class="num">Attempts</th>
                <th scope="col">Last error or reason</th>
              </tr>
            </thead>
            <tbody>
              {m.deliveries.map((d) => (
                <tr key={d.destination}>
                  <th scope="row">{d.destination}</th>
                  <td data-testid={"delivery-" + d.destination}>
                    <Badge status={d.status} />
                  </td>
                  <td class="num">{d.attempts}</td>
                  <td class="wrap">
                    {d.reason ?? "—"}
                    {d.dismissed_by && (
                      <span class="muted">
                        {" "}(dismissed by {d.dismissed_by}, <Time at={d.dismissed_at} />)
                      </span>
                    )}
                  </td>
                </tr>
              ))}
            </tbody>
          </table>
          {atLeast(me.role, "operator") && <Actions m={m} onDone={msg.reload} />}
          <h2>Payload</h2>
          {me.permissions.includes("payloads") ? (
            <Payload id={id} m={atLeast(me.role, "operator") ? m : undefined} onEdited={msg.reload} />
          ) : (
            <Notice>Reading payloads needs the payloads permission.</Notice>
          )}
        </>
      )}
    </section>
  );
}

function Actions({ m, onDone }: { m: Message; onDone: () => void }) {
  const quarantined = m.deliveries.filter((d) => d.status === "quarantined").map((d) => d.destination);
  const [chosen, setChosen] = useState<string[]>(quarantined);
  const [reason, setReason] = useState("");
  const [error, setError] = useState<unknown>();
  const [result, setResult] = useState<string>();
  const [busy, setBusy] = useState(false);
  const id = m.message.id;
  // A destination that is no longer quarantined (after a reload) drops out.
  const picked = chosen.filter((d) => quarantined.includes(d));
  // All of them: the API's default (every quarantined delivery); else named.
  const named = picked.length === quarantined.length ? undefined : picked;
  const run = async (what: () => Promise<string>) => {
    setBusy(true);
    setError(undefined);
    setResult(undefined);
    try {
      setResult(await what());
      onDone();
    } catch (e) {
      setError(e);
    } finally {
      setBusy(false);
    }
  };
  const resend = () =>
    run(async () => {
      const r = await api<{ deliveries: { destination: string; was: string; placement: string }[] }>(
        "POST", `/messages/${enc(id)}/resend`, named ? { destinations: named } : undefined);
      return "Resent: " + r.deliveries.map((d) =>
        `${d.destination} (was ${d.was}, ${d.placement === "in_place" ? "in its place" : "at the lane's tail"})`).join(", ");
    });
  const dismiss = (e: Event) => {
    e.preventDefault();
    run(async () => {
      const r = await api<{ destinations: string[] }>("POST", `/messages/${enc(id)}/dismiss`,
        named ? { reason, destinations: named } : { reason });
      setReason("");
      return "Dismissed: " + r.destinations.join(", ");
    });
  };
  return (
    <div class="panel" aria-labelledby="actions-title">
      <h2 id="actions-title">Actions</h2>
      {quarantined.length === 0 ? (
        <p>Nothing is quarantined: there is nothing to resend or dismiss.</p>
      ) : (
        <>
          <fieldset class="perms">
            <legend>Quarantined deliveries to act on</legend>
            {quarantined.map((d) => (
              <label key={d} for={"act-" + d}>
                <input id={"act-" + d} type="checkbox" checked={picked.includes(d)}
                  onChange={(e) => setChosen(e.currentTarget.checked ? [...picked, d] : picked.filter((x) => x !== d))} />{" "}
                {d}
              </label>
            ))}
          </fieldset>
          <div class="row">
            <button type="button" class="primary" disabled={busy || picked.length === 0} onClick={resend}>
              Resend
            </button>
          </div>
          <form class="inline" onSubmit={dismiss}>
            <Field label="Reason to dismiss" id="dismiss-reason">
              <input id="dismiss-reason" required maxLength={500} value={reason}
                onInput={(e) => setReason(e.currentTarget.value)} />
            </Field>
            <button type="submit" disabled={busy || picked.length === 0}>
              Dismiss
            </button>
          </form>
        </>
      )}
      {result && <p role="status" class="ok">{result}</p>}
      <ErrorBox error={error} />
    </div>
  );
}

function Payload({ id, m, onEdited }: { id: string; m?: Message; onEdited: () => void }) {
  const [shown, setShown] = useState(false);
  const p = useAsync<MessagePayload | undefined>(
    () => (shown ? api<MessagePayload>("GET", `/messages/${enc(id)}/payload`) : Promise.resolve(undefined)),
    [id, shown],
  );
  if (!shown) {
    return (
      <p>
        <button type="button" onClick={() => setShown(true)}>
          Show the payload
        </button>{" "}
        <span class="muted">(every read is written to the audit log)</span>
      </p>
    );
  }
  if (p.error) return <ErrorBox error={p.error instanceof ApiError ? p.error : String(p.error)} />;
  if (!p.data) return <p role="status">Loading…</p>;
  const d = p.data;
  return (
    <>
      <h3>Raw ({d.encoding})</h3>
      <pre class="raw" data-testid="raw" tabIndex={0} aria-label="Raw payload">
        {d.encoding === "utf-8" ? d.payload.replace(/\r\n?/g, "\n") : d.payload}
      </pre>
      {d.encoding === "utf-8" && !d.segments?.length && <PayloadViews text={d.payload} />}
      {m && d.encoding === "utf-8" && <Editor m={m} original={d.payload} onDone={onEdited} />}
      {d.segments && d.segments.length > 0 && (
        <>
          <h3>Parsed HL7</h3>
          <table class="data hl7" data-testid="segments">
            <thead>
              <tr>
                <th scope="col">Field</th>
                <th scope="col">Name</th>
                <th scope="col">Value</th>
              </tr>
            </thead>
            {d.segments.map((s, i) => (
              <tbody key={i}>
                <tr class="segment">
                  <th scope="rowgroup" colSpan={3}>
                    {s.name}
                  </th>
                </tr>
                {s.fields.map((f) => (
                  <tr key={f.position}>
                    <td class="mono">{f.position}</td>
                    <td>{fieldName(f.position)}</td>
                    <td class="mono wrap">{f.value}</td>
                  </tr>
                ))}
              </tbody>
            ))}
          </table>
        </>
      )}
      {d.outputs.length > 0 && (
        <>
          <h3>Saved outputs</h3>
          {d.outputs.map((o) => (
            <Output key={o.destination} destination={o.destination} output={o.output}
              input={d.encoding === "utf-8" ? d.payload : ""} />
          ))}
        </>
      )}
    </>
  );
}

// DiffTable is a field-level HL7 diff: each field's position and name,
// its value before and after, and the change.
function DiffTable({ rows, testid, before, after, caption }: {
  rows: ReturnType<typeof diffHL7>; testid: string; before: string; after: string; caption?: string;
}) {
  return (
    <table class="data diff" data-testid={testid}>
      {caption && <caption class="sr-only">{caption}</caption>}
      <thead>
        <tr>
          <th scope="col">Field</th>
          <th scope="col">Name</th>
          <th scope="col">{before}</th>
          <th scope="col">{after}</th>
          <th scope="col">Change</th>
        </tr>
      </thead>
      <tbody>
        {rows.map((r, i) => (
          <tr key={i} class={"diff-" + r.change}>
            <td class="mono">{r.position}</td>
            <td>{fieldName(r.position)}</td>
            <td class="mono wrap">{r.input ?? "—"}</td>
            <td class="mono wrap">{r.output ?? "—"}</td>
            <td>{r.change}</td>
          </tr>
        ))}
      </tbody>
    </table>
  );
}

// Output is what the transform produced for a destination: HL7 with a
// field-level diff against the input, JSON pretty-printed, else as it is.
function Output({ destination, output, input }: { destination: string; output: string; input: string }) {
  const [all, setAll] = useState(false);
  const json = prettyJSON(output);
  const csv = json === undefined ? parseCSV(output) : undefined;
  const hl7 = isHL7(output) && isHL7(input);
  const rows = hl7 ? diffHL7(input, output) : [];
  const changed = rows.filter((r) => r.change !== "same");
  const shown = all ? rows : changed;
  return (
    <div>
      <h4>{destination}</h4>
      <pre class="raw" tabIndex={0} aria-label={"Output for " + destination}>
        {json ?? output.replace(/\r\n?/g, "\n")}
      </pre>
      {csv && <CSVTable rows={csv} label={"Output for " + destination + " as a table"} />}
      {hl7 && (
        <>
          <p>
            {changed.length === 0 ? "The output's fields are the input's." : `${changed.length} field(s) differ from the input.`}{" "}
            <button type="button" aria-pressed={all} onClick={() => setAll(!all)}>
              {all ? "Show the differences only" : "Show every field"}
            </button>
          </p>
          {shown.length > 0 && (
            <DiffTable rows={shown} testid={"diff-" + destination} before="Input" after="Output"
              caption={"Input against the output for " + destination} />
          )}
        </>
      )}
    </div>
  );
}

// Editor is edit-and-resend: the payload one segment a line (the HL7
// structure stays visible), the fields changed so far against the
// original, a reason, and the destinations the corrected copy goes to
// (POST /messages/{id}/edit; operator and payloads).
function Editor({ m, original, onDone }: { m: Message; original: string; onDone: () => void }) {
  const [open, setOpen] = useState(false);
  const [text, setText] = useState(original.replace(/\r\n?/g, "\n").replace(/\n+$/, ""));
  const [reason, setReason] = useState("");
  const quarantined = m.deliveries.filter((d) => d.status === "quarantined").map((d) => d.destination);
  const eligible = m.deliveries.filter((d) => d.status !== "pending").map((d) => d.destination);
  const [dests, setDests] = useState<string[]>(quarantined);
  const [error, setError] = useState<unknown>();
  const [done, setDone] = useState<Schemas["Edited"]>();
  const [busy, setBusy] = useState(false);
  const hl7 = isHL7(original);
  const changes = hl7 ? diffHL7(original, text).filter((r) => r.change !== "same") : [];
  const sameAsQuarantined = dests.length === quarantined.length && dests.every((x) => quarantined.includes(x));
  const submit = async (e: Event) => {
    e.preventDefault();
    setBusy(true);
    setError(undefined);
    try {
      const sep = hl7 ? "\r" : "\n";
      const payload = text.split("\n").filter((l) => l.trim() !== "").join(sep) + (/[\r\n]$/.test(original) ? sep : "");
      const body: Record<string, unknown> = { payload, reason };
      if (!sameAsQuarantined) body.destinations = dests;
      setDone(await api<Schemas["Edited"]>("POST", `/messages/${enc(m.message.id)}/edit`, body));
      setOpen(false);
      onDone();
    } catch (x) {
      setError(x);
    } finally {
      setBusy(false);
    }
  };
  return (
    <div class="panel" aria-labelledby="edit-title">
      <h3 id="edit-title">Edit and resend</h3>
      {done && (
        <p role="status" class="ok" data-testid="edited">
          Sent a corrected copy, <a class="mono" href={"/messages/" + enc(done.copy)}>{done.copy}</a>, to{" "}
          {done.destinations.join(", ")}
          {done.replaced.length ? `; it replaces the quarantined ${done.replaced.join(", ")}` : ""}.
        </p>
      )}
      {!open ? (
        <button type="button" onClick={() => setOpen(true)} aria-expanded="false">
          Edit a corrected copy
        </button>
      ) : (
        <form onSubmit={submit}>
          <p class="muted">
            One segment a line; the copy gets its keys from the new text and goes to the tail of its key's lane. The
            original stays as it was received.
          </p>
          <label for="edit-payload" class="field-label">Corrected message</label>
          <textarea id="edit-payload" class="editor" rows={Math.min(20, text.split("\n").length + 2)} wrap="off"
            spellcheck={false} value={text} onInput={(e) => setText(e.currentTarget.value)} />
          {hl7 && (
            <>
              <h4>Changed fields: {changes.length}</h4>
              {changes.length > 0 && (
                <DiffTable rows={changes} testid="edit-changes" before="Was" after="Now" />
              )}
            </>
          )}
          <fieldset class="perms">
            <legend>Send the copy to</legend>
            {eligible.map((d) => (
              <label key={d} for={"edit-to-" + d}>
                <input id={"edit-to-" + d} type="checkbox" checked={dests.includes(d)}
                  onChange={(e) => setDests(e.currentTarget.checked ? [...dests, d] : dests.filter((x) => x !== d))} />{" "}
                {d}
                {quarantined.includes(d) ? " (quarantined)" : ""}
              </label>
            ))}
          </fieldset>
          <Field label="Why (kept with the copy and in the audit log)" id="edit-reason">
            <input id="edit-reason" required maxLength={500} value={reason} onInput={(e) => setReason(e.currentTarget.value)} />
          </Field>
          <ErrorBox error={error} />
          <div class="row">
            <button type="submit" class="primary" disabled={busy || dests.length === 0}>
              Send the corrected copy
            </button>
            <button type="button" onClick={() => setOpen(false)}>
              Cancel
            </button>
          </div>
        </form>
      )}
    </div>
  );
}

// PayloadViews is a JSON or CSV payload's formatted view.
function PayloadViews({ text }: { text: string }) {
  const json = prettyJSON(text);
  if (json !== undefined) {
    return (
      <>
        <h3>JSON</h3>
        <pre class="raw" tabIndex={0} aria-label="The payload as JSON" data-testid="json">{json}</pre>
      </>
    );
  }
  const csv = parseCSV(text);
  if (csv) {
    return (
      <>
        <h3>CSV</h3>
        <CSVTable rows={csv} label="The payload as a table" />
      </>
    );
  }
  return null;
}
