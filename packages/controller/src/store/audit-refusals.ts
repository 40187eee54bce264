// Refusals anyone can cause at will, counted instead of written one by one.
//
// A password-guessing storm, a flood of oversized bodies, of certificate-less agent upgrades
// or of a node's refused messages must not fill the disk, nor drown the entries that matter:
// each (source, minute, principal, role, status, code) gets one audit
// entry, written at its first refusal, whose `count` grows as more arrive. The store's row is
// brought up to date every few seconds; the line in audit.jsonl is written once, when the
// minute is over (or the controller stops), with the final count.
//
// The keys of one minute are bounded: past MAX_KEYS, new sources share one entry whose
// source is "(other)", so many addresses cannot make many entries either.

export interface RefusalEvent {
  source: string;
  /** The principal: a user, or a node (role "node") whose verified certificate named it. */
  user: string | null;
  /** "node" when the principal is a node; part of the key, so a user and a node of one name never share an entry. */
  role?: string | null;
  method: string;
  route: string;
  status: number | null;
  /** The stable error code, part of the key. */
  code: string;
  /** The first refusal's message. */
  reason: string;
  /** What the first refusal was about (job id, node…); later ones add only their routes. */
  resource?: Record<string, string>;
}

/** Where tallies are kept: the audit log's store and file. */
export interface TallySink {
  /** Writes the entry of a key's first refusal; returns its id. */
  open(event: RefusalEvent, at: number): string;
  /** Brings the entry's count, method and route (which may have become "several") and the routes it saw up to date. */
  update(
    id: string,
    tally: { count: number; method: string; route: string; routes: string[]; resource: Record<string, string> },
  ): void;
  /** The minute is over: appends the entry's final line to the file. */
  close(id: string): void;
}

export const MAX_KEYS = 10_000;
/** Routes named in an entry of several (resource.routes); more are left out. */
export const MAX_ROUTES = 8;
const MINUTE_MS = 60_000;
const SEVERAL = '(several)';

interface Tally {
  id: string;
  minute: number;
  count: number;
  method: string;
  route: string;
  routes: string[];
  resource: Record<string, string>;
  dirty: boolean;
}

export class RefusalTally {
  private readonly tallies = new Map<string, Tally>();

  constructor(
    private readonly sink: TallySink,
    private readonly now: () => number = Date.now,
  ) {}

  count(event: RefusalEvent): void {
    const at = this.now();
    const minute = Math.floor(at / MINUTE_MS);
    let key = keyOf(minute, event);
    if (!this.tallies.has(key) && this.tallies.size >= MAX_KEYS) {
      event = { ...event, source: '(other)' };
      key = keyOf(minute, event);
    }
    const tally = this.tallies.get(key);
    if (!tally) {
      this.tallies.set(key, {
        id: this.sink.open(event, at),
        minute,
        count: 1,
        method: event.method,
        route: event.route,
        routes: [event.route],
        resource: event.resource ?? {},
        dirty: false,
      });
      return;
    }
    tally.count++;
    if (tally.method !== event.method) tally.method = SEVERAL;
    if (tally.route !== event.route) tally.route = SEVERAL;
    if (tally.routes.length < MAX_ROUTES && !tally.routes.includes(event.route)) tally.routes.push(event.route);
    tally.dirty = true;
  }

  /** Writes what changed to the store, and closes the entries of minutes that are over (all of them when `all`). */
  flush(all = false): void {
    const minute = Math.floor(this.now() / MINUTE_MS);
    for (const [key, tally] of this.tallies) {
      if (tally.dirty) this.sink.update(tally.id, tally);
      tally.dirty = false;
      if (!all && tally.minute >= minute) continue;
      this.sink.close(tally.id);
      this.tallies.delete(key);
    }
  }

  get size(): number {
    return this.tallies.size;
  }
}

const keyOf = (minute: number, e: RefusalEvent): string =>
  JSON.stringify([minute, e.source, e.user, e.role ?? null, e.status, e.code]);
