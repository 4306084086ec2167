// Throughput per interface, measured in the browser: the API keeps no
// history, so the console adds up each destination's since_start.sent
// from the event stream while it is watched, in one-minute buckets for the
// last hour (kept in sessionStorage, so moving between pages and reloading
// keep them).
import type { State } from "./api/client";

const key = "ductus-throughput";
const hour = 60;

interface Track {
  last: number; // the interface's sent total at the last event
  at: number; // when (ms)
  buckets: Record<string, number>; // minute -> sent in it
}

function load(): Record<string, Track> {
  try {
    return JSON.parse(sessionStorage.getItem(key) ?? "{}") as Record<string, Track>;
  } catch {
    return {};
  }
}

/** Records a state event's sent totals. */
export function record(state: State, now = Date.now()): void {
  const all = load();
  const minute = Math.floor(now / 60000);
  for (const ix of state.interfaces) {
    const total = ix.destinations.reduce((n, d) => n + (d.since_start?.sent ?? 0), 0);
    const t = all[ix.name];
    // A baseline older than two minutes (the page was closed) or a lower
    // total (the engine restarted) starts again.
    if (t && now - t.at < 120000 && total >= t.last) {
      t.buckets[minute] = (t.buckets[minute] ?? 0) + (total - t.last);
    }
    const buckets = t?.buckets ?? {};
    for (const m of Object.keys(buckets)) if (Number(m) <= minute - hour) delete buckets[m];
    all[ix.name] = { last: total, at: now, buckets };
  }
  try {
    sessionStorage.setItem(key, JSON.stringify(all));
  } catch {
    /* storage full or off: no sparkline */
  }
}

/** The sent count per minute for the last hour, oldest first (60 values). */
export function series(name: string, now = Date.now()): number[] {
  const t = load()[name];
  const minute = Math.floor(now / 60000);
  const out: number[] = [];
  for (let m = minute - hour + 1; m <= minute; m++) out.push(t?.buckets[m] ?? 0);
  return out;
}
