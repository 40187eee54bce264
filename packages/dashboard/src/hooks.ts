// Data for a view: loaded once, then again whenever a change event concerns it. Reloads
// coalesce: at most one request in flight and one queued, however fast events arrive.
import { useEffect, useRef, useState } from 'preact/hooks';
import { onChange, type Change } from './api/events';

export interface Resource<T> {
  data: T | undefined;
  error: string | null;
  reload: () => void;
}

export function useResource<T>(
  load: () => Promise<T>,
  deps: unknown[],
  concerns: (change: Change) => boolean,
): Resource<T> {
  const [data, setData] = useState<T | undefined>(undefined);
  const [error, setError] = useState<string | null>(null);
  const state = useRef({ inFlight: false, again: false, alive: true, load });
  state.current.load = load;
  const run = (): void => {
    const s = state.current;
    if (s.inFlight) {
      s.again = true;
      return;
    }
    s.inFlight = true;
    s.load()
      .then(
        (value) => s.alive && (setData(value), setError(null)),
        (err: Error) => s.alive && setError(err.message),
      )
      .finally(() => {
        s.inFlight = false;
        if (s.again && s.alive) {
          s.again = false;
          run();
        }
      });
  };
  useEffect(() => {
    state.current.alive = true;
    setData(undefined);
    run();
    const off = onChange((c) => (c.kind === 'resync' || concerns(c)) && run());
    return () => {
      state.current.alive = false;
      off();
    };
  }, deps);
  return { data, error, reload: run };
}

/** Re-renders every `ms` while mounted: durations of running jobs. */
export function useTick(ms: number): number {
  const [now, setNow] = useState(Date.now());
  useEffect(() => {
    const t = setInterval(() => setNow(Date.now()), ms);
    return () => clearInterval(t);
  }, [ms]);
  return now;
}
