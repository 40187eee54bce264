// Hash routes: the controller serves one index.html; the page is chosen after the '#'.
import { useEffect, useState } from 'preact/hooks';

export type Route =
  | { page: 'fleet' }
  | { page: 'node'; name: string }
  | { page: 'jobs' }
  | { page: 'job'; id: string }
  | { page: 'network' }
  | { page: 'missing'; path: string };

export function parseRoute(hash: string): Route {
  const path = hash.replace(/^#/, '') || '/';
  const parts = path.split('/').filter(Boolean).map(decodeURIComponent);
  if (parts.length === 0) return { page: 'fleet' };
  if (parts[0] === 'nodes' && parts.length === 2) return { page: 'node', name: parts[1]! };
  if (parts[0] === 'jobs' && parts.length === 1) return { page: 'jobs' };
  if (parts[0] === 'jobs' && parts.length === 2) return { page: 'job', id: parts[1]! };
  if (parts[0] === 'network' && parts.length === 1) return { page: 'network' };
  return { page: 'missing', path };
}

export const href = {
  fleet: () => '#/',
  node: (name: string) => `#/nodes/${encodeURIComponent(name)}`,
  jobs: () => '#/jobs',
  job: (id: string) => `#/jobs/${encodeURIComponent(id)}`,
  network: () => '#/network',
};

export function useRoute(): Route {
  const [route, setRoute] = useState(() => parseRoute(location.hash));
  useEffect(() => {
    const on = () => setRoute(parseRoute(location.hash));
    addEventListener('hashchange', on);
    return () => removeEventListener('hashchange', on);
  }, []);
  return route;
}
