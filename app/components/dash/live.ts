import { useEffect, useRef, useState } from "react";
import { useNavigation, useRevalidator } from "react-router";

/**
 * Keeps a Dash page live: listens to /dash/events (server-sent events of the viewer's org)
 * and reloads the page's data when something changes, coalescing bursts. After a dropped
 * connection comes back it reloads once, since events may have been missed meanwhile.
 */
export function useLiveRevalidation(options: { minIntervalMs?: number } = {}): "connecting" | "live" | "offline" {
  const revalidator = useRevalidator();
  const navigation = useNavigation();
  const latest = useRef({ revalidator, navigation });
  latest.current = { revalidator, navigation };
  const [state, setState] = useState<"connecting" | "live" | "offline">("connecting");
  const minInterval = options.minIntervalMs ?? 200;

  useEffect(() => {
    let timer: ReturnType<typeof setTimeout> | null = null;
    let lastRun = 0;
    const schedule = () => {
      if (timer) return;
      const wait = Math.max(0, lastRun + minInterval - Date.now());
      timer = setTimeout(() => {
        timer = null;
        // A submission or navigation in flight loads fresh data itself; interrupting it would
        // commit its result with stale data. Try again once it has settled.
        if (latest.current.navigation.state !== "idle" || latest.current.revalidator.state !== "idle") {
          lastRun = Date.now();
          schedule();
          return;
        }
        lastRun = Date.now();
        void latest.current.revalidator.revalidate();
      }, wait);
    };
    const source = new EventSource("/dash/events");
    source.addEventListener("open", () => {
      setState("live");
      // Every open, the first too: a change made between the page's render and this connection
      // sent its event to nobody (a small Linear import can finish in that gap).
      schedule();
    });
    source.addEventListener("error", () => {
      setState(source.readyState === EventSource.CLOSED ? "offline" : "connecting");
    });
    source.addEventListener("change", schedule);
    return () => {
      source.close();
      if (timer) clearTimeout(timer);
    };
  }, [minInterval]);
  return state;
}

/**
 * The current time for countdowns, ticking each second in the browser. It starts at the
 * server's clock (so the first render matches the HTML) and corrects for the difference
 * between the server's and the browser's clocks.
 */
export function useServerNow(serverNowIso: string): number {
  const serverNow = Date.parse(serverNowIso);
  const [now, setNow] = useState(serverNow);
  const offset = useRef<number | null>(null);
  useEffect(() => {
    // A fresh snapshot re-bases the clock on the server's time.
    offset.current = serverNow - Date.now();
    setNow(serverNow);
    const id = setInterval(() => setNow(Date.now() + offset.current!), 1000);
    return () => clearInterval(id);
  }, [serverNow]);
  return now;
}
