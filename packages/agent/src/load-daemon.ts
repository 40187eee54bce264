// Loads daemon.ts for `rankd agent`: from the bundle `npm run build` makes of it
// (dist/bundle/daemon.js, scripts/bundle-agent.mjs: one file instead of some 800 modules,
// most of them TypeBox's, whose records and source strings an agent would otherwise
// hold for its whole life), unless a compile ran after the bundle was made: then the
// bundle holds old code, and the compiled modules are loaded instead, never a mix.
import { statSync } from 'node:fs';

export type Daemon = typeof import('./daemon.js');

// relative to dist/load-daemon.js: the bundle beside it, the compiles it is made from
const BUNDLE = new URL('./bundle/daemon.js', import.meta.url);
const COMPILES = ['./.tsbuildinfo', '../../protocol/dist/.tsbuildinfo'];

/** True when dist/bundle/daemon.js exists and no compile of the agent or protocol is newer. */
export function daemonBundleIsCurrent(): boolean {
  const made = statSync(BUNDLE, { throwIfNoEntry: false })?.mtimeMs;
  if (made === undefined) return false;
  // a missing build info (an installed copy without it) cannot be newer than the bundle
  return COMPILES.every((file) => (statSync(new URL(file, import.meta.url), { throwIfNoEntry: false })?.mtimeMs ?? 0) <= made);
}

export async function loadDaemon(): Promise<Daemon> {
  return daemonBundleIsCurrent() ? ((await import(BUNDLE.href)) as Daemon) : import('./daemon.js');
}
