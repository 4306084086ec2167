// A small history router: every page and every search is a URL (a
// permalink); the engine serves index.html for any path outside /api/.
import { useEffect, useState } from "preact/hooks";

export interface Location {
  path: string;
  params: URLSearchParams;
}

function current(): Location {
  return { path: location.pathname, params: new URLSearchParams(location.search) };
}

const subscribers = new Set<() => void>();

/** Goes to url (a path with an optional query) without a reload. */
export function navigate(url: string, replace = false): void {
  if (url === location.pathname + location.search) return;
  if (replace) history.replaceState(null, "", url);
  else history.pushState(null, "", url);
  subscribers.forEach((fn) => fn());
  window.scrollTo(0, 0);
}

/** The current location; re-renders when it changes. */
export function useLocation(): Location {
  const [loc, setLoc] = useState(current);
  useEffect(() => {
    const update = () => setLoc(current());
    subscribers.add(update);
    window.addEventListener("popstate", update);
    return () => {
      subscribers.delete(update);
      window.removeEventListener("popstate", update);
    };
  }, []);
  return loc;
}

/** Matches path against a pattern like /messages/:id; null if it does not. */
export function match(pattern: string, path: string): Record<string, string> | null {
  const split = (x: string) => x.replace(/\/+$/, "").split("/");
  const p = split(pattern);
  const s = split(path);
  if (p.length !== s.length) return null;
  const out: Record<string, string> = {};
  for (let i = 0; i < p.length; i++) {
    if (p[i].startsWith(":")) {
      if (!s[i]) return null;
      out[p[i].slice(1)] = decodeURIComponent(s[i]);
    } else if (p[i] !== s[i]) return null;
  }
  return out;
}

/** Links within the console go through navigate; others (new tab, modified clicks) as the browser does. */
export function onLinkClick(e: MouseEvent): void {
  if (e.defaultPrevented || e.button !== 0 || e.metaKey || e.ctrlKey || e.shiftKey || e.altKey) return;
  const a = (e.target as Element | null)?.closest?.("a");
  if (!a || a.target || a.hasAttribute("download")) return;
  const href = a.getAttribute("href");
  if (!href || !href.startsWith("/") || href.startsWith("/api/") || href.startsWith("//")) return;
  e.preventDefault();
  navigate(href);
}
