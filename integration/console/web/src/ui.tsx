// Small pieces every page uses.
import type { ComponentChildren } from "preact";
import { useCallback, useEffect, useState } from "preact/hooks";

import { errorText } from "./api/client";

/** An error from the API, in words, announced to screen readers. */
export function ErrorBox({ error }: { error: unknown }) {
  if (error === undefined || error === null) return null;
  return (
    <p class="error" role="alert">
      {errorText(error)}
    </p>
  );
}

export function Notice({ children }: { children: ComponentChildren }) {
  return (
    <p class="notice" role="status">
      {children}
    </p>
  );
}

/** A status word as a badge (its color is not the only cue: the word is there). */
export function Badge({ status }: { status: string }) {
  return <span class={"badge badge-" + status.replace(/[^a-z_]/g, "")}>{status}</span>;
}

export function Time({ at }: { at?: string }) {
  if (!at) return <span>—</span>;
  const d = new Date(at);
  return (
    <time dateTime={at} title={at}>
      {d.toLocaleString(undefined, { dateStyle: "short", timeStyle: "medium" })}
    </time>
  );
}

/** How long ago at was, in words: "4 s", "12 min", "3 h 5 min", "2 d 4 h". */
export function ageText(at: string, now = Date.now()): string {
  const s = Math.max(0, Math.floor((now - Date.parse(at)) / 1000));
  if (s < 60) return `${s} s`;
  const m = Math.floor(s / 60);
  if (m < 60) return `${m} min`;
  const h = Math.floor(m / 60);
  if (h < 24) return m % 60 ? `${h} h ${m % 60} min` : `${h} h`;
  const d = Math.floor(h / 24);
  return h % 24 ? `${d} d ${h % 24} h` : `${d} d`;
}

// The clocks for components that show the time passing: one timer a
// period, running while some component listens, re-rendering only those.
const clocks = new Map<number, { ticks: Set<() => void>; timer: ReturnType<typeof setInterval> }>();

/** The time now (ms), re-rendering the component every `every` ms. */
export function useNow(every = 1000): number {
  const [now, setNow] = useState(Date.now);
  useEffect(() => {
    const tick = () => setNow(Date.now());
    let c = clocks.get(every);
    if (!c) {
      const ticks = new Set<() => void>();
      c = { ticks, timer: setInterval(() => ticks.forEach((fn) => fn()), every) };
      clocks.set(every, c);
    }
    c.ticks.add(tick);
    const clock = c;
    return () => {
      clock.ticks.delete(tick);
      if (clock.ticks.size === 0) {
        clearInterval(clock.timer);
        clocks.delete(every);
      }
    };
  }, [every]);
  return now;
}

/** The age of at (now − at), kept current; "—" without at; over warnAfter seconds it is marked as a warning. */
export function Age({ at, warnAfter = 300, testid }: { at?: string; warnAfter?: number; testid?: string }) {
  if (!at) return <span data-testid={testid}>—</span>;
  return <Ticking at={at} warnAfter={warnAfter} testid={testid} />;
}

function Ticking({ at, warnAfter, testid }: { at: string; warnAfter: number; testid?: string }) {
  const now = useNow();
  const old = now - Date.parse(at) > warnAfter * 1000;
  return (
    <span class={old ? "warn-text" : undefined} title={"since " + new Date(at).toLocaleString()} data-testid={testid}>
      {ageText(at, now)}
    </span>
  );
}

export interface Async<T> {
  data?: T;
  error?: unknown;
  loading: boolean;
  reload: () => void;
}

/** Loads with fn whenever deps change; reload loads again. */
export function useAsync<T>(fn: () => Promise<T>, deps: unknown[]): Async<T> {
  const [state, setState] = useState<{ data?: T; error?: unknown; loading: boolean }>({ loading: true });
  const [n, setN] = useState(0);
  useEffect(() => {
    let live = true;
    setState((s) => ({ ...s, loading: true }));
    fn().then(
      (data) => live && setState({ data, loading: false }),
      (error) => live && setState({ error, loading: false }),
    );
    return () => {
      live = false;
    };
    // eslint-disable-next-line react-hooks/exhaustive-deps
  }, [...deps, n]);
  const reload = useCallback(() => setN((x) => x + 1), []);
  return { ...state, reload };
}

/** Sets the document title for a page. */
export function useTitle(title: string): void {
  useEffect(() => {
    document.title = title + " · Ductus";
  }, [title]);
}

/** A labelled form row. */
export function Field({ label, children, id }: { label: string; id: string; children: ComponentChildren }) {
  return (
    <div class="field">
      <label for={id}>{label}</label>
      {children}
    </div>
  );
}
