// One SQLite transaction per event-loop turn for what agents report.
//
// Every rank.started and rank.exit is written through to the store, and in SQLite each
// commit costs far more than the statements inside it (WAL frames, the commit record, the
// lock). A launch of 2,000 nodes × 8 ranks is 64,000 of those writes arriving within a
// second, so with one commit each the store would bound the whole launch. The agent
// gateway runs every frame it receives inside `within()`: the first write of a turn opens
// a transaction and the turn's check phase (setImmediate, after every socket read of that
// poll) commits it, so all the frames read in one turn share one commit.
//
// What must not change is the order the controller keeps with the outside world: nothing
// is told what a crash could still undo. So while a batch is open, messages to agents wait
// for its commit (`afterCommit`), and REST answers commit it before they leave (`flush`,
// from an onSend hook). Writes from other paths that run while a batch is open simply join it.
import type { Logger } from 'pino';
import type { Db } from './database.js';

export class WriteBatch {
  private open = false;
  private readonly held: Array<() => void> = [];

  constructor(
    private readonly db: Db,
    private readonly log: Logger,
  ) {}

  /** Runs `work` with this turn's transaction open: opens it (and schedules its commit) if needed. */
  within<T>(work: () => T): T {
    this.begin();
    return work();
  }

  /** Runs `send` once what was written before it is committed: at once when no batch is open. */
  afterCommit(send: () => void): void {
    if (this.open) this.held.push(send);
    else send();
  }

  /** Commits the open batch now, then lets the messages it held go, in order. */
  flush(): void {
    if (!this.open) return;
    this.open = false;
    try {
      this.db.exec('COMMIT');
    } catch (err) {
      // A failed commit (disk full, I/O error) loses this turn's writes; the in-memory state
      // went ahead. Say so loudly: the next restart reconciles from the agents' reports.
      this.log.error({ err: (err as Error).message }, 'store: commit of a write batch failed; rolling back');
      if (this.db.inTransaction) this.db.exec('ROLLBACK');
    }
    const held = this.held.splice(0);
    for (const send of held) send();
  }

  private begin(): void {
    // A transaction someone else opened (a db.transaction() function) is theirs to end.
    if (this.open || this.db.inTransaction) return;
    this.db.exec('BEGIN');
    this.open = true;
    setImmediate(() => this.flush());
  }
}
