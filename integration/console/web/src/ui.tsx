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
