// The message browser: an interface's stored messages, newest first,
// searched by the API's indexed filters (MRN = the ordering key, MSH-10 =
// the dedupe key, message type, intake status, time range) and
// keyset-paged. Every search and every page is a URL (a permalink).
import { useState } from "preact/hooks";

import { api, enc, query, type MessagePage } from "../api/client";
import { navigate } from "../router";
import { Badge, ErrorBox, Field, Notice, Time, useAsync, useTitle } from "../ui";

const filterKeys = ["key", "dedupe_key", "type", "status", "since", "until"] as const;
type Filters = Record<(typeof filterKeys)[number], string>;

// toLocalInput turns an RFC 3339 time into a datetime-local value (local time).
function toLocalInput(iso: string): string {
  if (!iso) return "";
  const d = new Date(iso);
  if (isNaN(d.getTime())) return "";
  const pad = (n: number) => String(n).padStart(2, "0");
  return `${d.getFullYear()}-${pad(d.getMonth() + 1)}-${pad(d.getDate())}T${pad(d.getHours())}:${pad(d.getMinutes())}`;
}

// fromLocalInput turns a datetime-local value into RFC 3339 (UTC).
function fromLocalInput(v: string): string {
  if (!v) return "";
  const d = new Date(v);
  return isNaN(d.getTime()) ? "" : d.toISOString();
}

export function MessagesPage({ name, params }: { name: string; params: URLSearchParams }) {
  useTitle("Messages of " + name);
  const filters = Object.fromEntries(filterKeys.map((k) => [k, params.get(k) ?? ""])) as Filters;
  const before = params.get("before") ?? "";
  const limit = params.get("limit") ?? "";
  const searchKey = JSON.stringify([name, filters, before, limit]);
  const page = useAsync(
    () => api<MessagePage>("GET", `/interfaces/${enc(name)}/messages` + query({ ...filters, before, limit })),
    [searchKey],
  );
  const [form, setForm] = useState<Filters>({ ...filters, since: toLocalInput(filters.since), until: toLocalInput(filters.until) });
  const [id, setId] = useState("");
  const base = `/interfaces/${enc(name)}/messages`;
  const set = (k: keyof Filters) => (e: Event) => setForm({ ...form, [k]: (e.currentTarget as HTMLInputElement).value });
  const search = (e: Event) => {
    e.preventDefault();
    navigate(base + query({
      key: form.key.trim(), dedupe_key: form.dedupe_key.trim(), type: form.type.trim(), status: form.status,
      since: fromLocalInput(form.since), until: fromLocalInput(form.until), limit,
    }));
  };
  const clear = () => {
    setForm({ key: "", dedupe_key: "", type: "", status: "", since: "", until: "" });
    navigate(base);
  };
  const filtered = filterKeys.some((k) => filters[k]);
  return (
    <section>
      <p class="crumbs">
        <a href="/">Overview</a> / <a href={"/interfaces/" + enc(name)}>{name}</a> / messages
      </p>
      <h1>Messages of {name}</h1>
      <form class="inline filters" onSubmit={search} aria-label="Search messages" role="search">
        <Field label="MRN (ordering key)" id="f-key">
          <input id="f-key" value={form.key} onInput={set("key")} />
        </Field>
        <Field label="MSH-10 (dedupe key)" id="f-dedupe">
          <input id="f-dedupe" value={form.dedupe_key} onInput={set("dedupe_key")} />
        </Field>
        <Field label="Type" id="f-type">
          <input id="f-type" placeholder="ADT^A01" value={form.type} onInput={set("type")} />
        </Field>
        <Field label="Intake" id="f-status">
          <select id="f-status" value={form.status} onChange={set("status")}>
            <option value="">any</option>
            <option value="pending">pending</option>
            <option value="duplicate">duplicate</option>
            <option value="rejected">rejected</option>
          </select>
        </Field>
        <Field label="Since" id="f-since">
          <input id="f-since" type="datetime-local" value={form.since} onInput={set("since")} />
        </Field>
        <Field label="Until" id="f-until">
          <input id="f-until" type="datetime-local" value={form.until} onInput={set("until")} />
        </Field>
        <button type="submit" class="primary">Search</button>
        {filtered && <button type="button" onClick={clear}>Clear</button>}
      </form>
      <form class="inline" onSubmit={(e) => { e.preventDefault(); if (id.trim()) navigate("/messages/" + enc(id.trim())); }}>
        <Field label="Open a message by ID" id="goto-id">
          <input id="goto-id" value={id} onInput={(e) => setId(e.currentTarget.value)} />
        </Field>
        <button type="submit">Open</button>
      </form>
      <ErrorBox error={page.error} />
      {page.loading && !page.data && <p role="status">Loading…</p>}
      {page.data && page.data.messages.length === 0 && (
        <Notice>No messages{filtered ? " match this search" : ""}{before ? " older than these" : ""}.</Notice>
      )}
      {page.data && page.data.messages.length > 0 && (
        <table class="data" data-testid="messages">
          <thead>
            <tr>
              <th scope="col">Message</th>
              <th scope="col">Received</th>
              <th scope="col">Type</th>
              <th scope="col">Intake</th>
              <th scope="col">Ordering key</th>
              <th scope="col">Dedupe key</th>
              <th scope="col" class="num">Lane</th>
              <th scope="col" class="num">Bytes</th>
            </tr>
          </thead>
          <tbody>
            {page.data.messages.map((m) => (
              <tr key={m.id}>
                <th scope="row">
                  <a href={"/messages/" + enc(m.id)} class="mono">
                    {m.id}
                  </a>
                </th>
                <td>
                  <Time at={m.received_at} />
                </td>
                <td>{m.type ?? "—"}</td>
                <td>
                  <Badge status={m.status} />
                  {m.duplicate_of && (
                    <>
                      {" "}of <a href={"/messages/" + enc(m.duplicate_of)}>{m.duplicate_of}</a>
                    </>
                  )}
                </td>
                <td>{m.ordering_key ?? "—"}</td>
                <td>{m.dedupe_key ?? "—"}</td>
                <td class="num">{m.lane ?? "—"}</td>
                <td class="num">{m.size}</td>
              </tr>
            ))}
          </tbody>
        </table>
      )}
      <nav class="pager" aria-label="Pages">
        {before && <a href={base + query({ ...filters, limit })}>Newest</a>}
        {page.data?.next && <a href={base + query({ ...filters, before: page.data.next, limit })}>Older</a>}
      </nav>
    </section>
  );
}
