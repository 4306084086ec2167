// The console's only way to the engine: the operator API, same origin, the
// session cookie (HttpOnly: the page never sees it), and X-Ductus: 1 on
// every request that changes something (the API's CSRF check).
import type { components } from "./schema";

export type Schemas = components["schemas"];
export type Principal = Schemas["Principal"];
export type Interface = Schemas["Interface"];
export type Destination = Schemas["Destination"];
export type Drain = Schemas["Drain"];
export type State = Schemas["State"];
export type MessagePage = Schemas["MessagePage"];
export type MessageSummary = Schemas["MessageSummary"];
export type Message = Schemas["Message"];
export type MessagePayload = Schemas["MessagePayload"];
export type Token = Schemas["Token"];
export type CreatedToken = Schemas["CreatedToken"];
export type User = Schemas["User"];
export type AuditPage = Schemas["AuditPage"];
export type Role = Principal["role"];
export type Permission = Principal["permissions"][number];

/** An answer of the API that is not a success, with its `error` text. */
export class ApiError extends Error {
  constructor(
    readonly status: number,
    message: string,
    readonly code?: string,
    readonly field?: string,
  ) {
    super(message);
  }
}

type Listener = (e: ApiError) => void;
const listeners = new Set<Listener>();

/** Calls fn for every 401 and password_change_required answer. */
export function onAuthProblem(fn: Listener): () => void {
  listeners.add(fn);
  return () => listeners.delete(fn);
}

/** Calls the API; resolves with the JSON answer (undefined for 204). */
export async function api<T>(method: string, path: string, body?: unknown): Promise<T> {
  const headers: Record<string, string> = { Accept: "application/json" };
  if (method !== "GET" && method !== "HEAD") headers["X-Ductus"] = "1";
  if (body !== undefined) headers["Content-Type"] = "application/json";
  let res: Response;
  try {
    res = await fetch("/api/v1" + path, {
      method,
      headers,
      body: body === undefined ? undefined : JSON.stringify(body),
      credentials: "same-origin",
    });
  } catch (e) {
    throw new ApiError(0, "the engine does not answer: " + (e instanceof Error ? e.message : String(e)));
  }
  if (res.status === 204) return undefined as T;
  let data: unknown = undefined;
  const text = await res.text();
  if (text) {
    try {
      data = JSON.parse(text);
    } catch {
      data = undefined;
    }
  }
  if (!res.ok) {
    const e = (data ?? {}) as Schemas["Error"];
    const err = new ApiError(res.status, e.error || `${res.status} ${res.statusText}`, e.code, e.field);
    if (res.status === 401 || err.code === "password_change_required") {
      if (path !== "/session") listeners.forEach((fn) => fn(err));
    }
    throw err;
  }
  return data as T;
}

/** A query string of the parameters that are set ("" when none is). */
export function query(params: Record<string, string | number | undefined>): string {
  const q = new URLSearchParams();
  for (const [k, v] of Object.entries(params)) if (v !== undefined && v !== "") q.set(k, String(v));
  const s = q.toString();
  return s ? "?" + s : "";
}

export const enc = encodeURIComponent;

/** Whether role is at least min (viewer < operator < admin). */
export function atLeast(role: Role | undefined, min: Role): boolean {
  const order: Role[] = ["viewer", "operator", "admin"];
  return role !== undefined && order.indexOf(role) >= order.indexOf(min);
}

/** The message of an error, for showing. */
export function errorText(e: unknown): string {
  if (e instanceof ApiError) return e.message;
  if (e instanceof Error) return e.message;
  return String(e);
}
