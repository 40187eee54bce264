// Loads daemon.ts for `rankd agent`: from its bundle, a build output of `npm run build`
// (dist/bundle/daemon.js, scripts/bundle-agent.mjs: one file instead of some 800 modules,
// most of them TypeBox's, whose records and source strings an agent would otherwise hold
// for its whole life). RANKD_DEV=1, the switch main.ts reads too, loads the compiled
// modules instead (a tree compiled with a bare `tsc -b`); never a mix of both.
export type Daemon = typeof import('./daemon.js');

// relative to dist/load-daemon.js
const BUNDLE = new URL('./bundle/daemon.js', import.meta.url);

export async function loadDaemon(): Promise<Daemon> {
  if (process.env.RANKD_DEV === '1') return import('./daemon.js');
  try {
    return (await import(BUNDLE.href)) as Daemon;
  } catch (err) {
    const e = err as NodeJS.ErrnoException;
    const named = `'${decodeURIComponent(BUNDLE.pathname)}'`;
    const missing = e?.code === 'ERR_MODULE_NOT_FOUND' && String(e.message).includes(named);
    if (!missing) throw err;
    throw new Error('the agent is not bundled: run `npm run build` (or RANKD_DEV=1 runs the compiled modules)', {
      cause: err,
    });
  }
}
