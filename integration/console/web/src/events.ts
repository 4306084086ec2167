// The live state: GET /api/v1/events (Server-Sent Events; the same-origin
// EventSource sends the session cookie) sends the interfaces and the drain
// state at once and whenever they change.
import { useEffect, useState } from "preact/hooks";

import type { State } from "./api/client";

export interface Live {
  state?: State;
  connected: boolean;
}

/** The latest state from the event stream while the component is mounted. */
export function useLiveState(): Live {
  const [live, setLive] = useState<Live>({ connected: false });
  useEffect(() => {
    const es = new EventSource("/api/v1/events");
    es.addEventListener("state", (e) => {
      try {
        const state = JSON.parse((e as MessageEvent).data) as State;
        setLive({ state, connected: true });
      } catch {
        /* a malformed event: keep the last state */
      }
    });
    es.onopen = () => setLive((l) => ({ ...l, connected: true }));
    es.onerror = () => setLive((l) => ({ ...l, connected: false }));
    return () => es.close();
  }, []);
  return live;
}
