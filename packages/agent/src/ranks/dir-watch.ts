// "Something changed in this rank's directory": new output, or exit.json renamed into
// place. One inotify watch per rank directory, shared by every interested party, and
// only while someone is interested, so a rank writing 500,000 lines costs no events when
// its reader is busy. Where inotify is not available (NFS spool, inotify limits), a
// stat poll stands in; its period stays well under the 100 ms a live follower may wait.
import fs from 'node:fs';

export const POLL_FALLBACK_MS = 20;

type Listener = () => void;

interface Watch {
  listeners: Set<Listener>;
  watcher: fs.FSWatcher | null;
  timer: NodeJS.Timeout | null;
}

const watches = new Map<string, Watch>();

/** Calls `listener` after changes in `dir` (possibly spuriously). Returns the unsubscribe function. */
export function watchRankDir(dir: string, listener: Listener): () => void {
  let w = watches.get(dir);
  if (!w) {
    w = { listeners: new Set(), watcher: null, timer: null };
    watches.set(dir, w);
    start(dir, w);
  }
  w.listeners.add(listener);
  return () => {
    const cur = watches.get(dir);
    if (!cur || !cur.listeners.delete(listener) || cur.listeners.size > 0) return;
    watches.delete(dir);
    cur.watcher?.close();
    if (cur.timer) clearInterval(cur.timer);
  };
}

function start(dir: string, w: Watch): void {
  const fire = (): void => {
    for (const l of [...w.listeners]) l();
  };
  try {
    w.watcher = fs.watch(dir, fire);
    w.watcher.on('error', () => {
      // the directory was removed (forget) or inotify failed: fall back to polling
      w.watcher?.close();
      w.watcher = null;
      w.timer ??= setInterval(fire, POLL_FALLBACK_MS);
    });
  } catch {
    w.timer = setInterval(fire, POLL_FALLBACK_MS);
  }
}
