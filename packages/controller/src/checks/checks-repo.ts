// Stored fabric checks: `rankd check net --last`, GET /v1/checks. A check's result is
// written once, when it ends, and never changes.
import type { CheckKind, CheckResult, CheckSummary } from '@rankd/protocol';
import type { Db } from '../store/database.js';

type Row = {
  id: string;
  kind: CheckKind;
  started_at: number;
  ended_at: number;
  by_user: string | null;
  pattern: string;
  nodes: number;
  flagged: string;
  result: string;
};

export class ChecksRepo {
  private readonly insert;
  private readonly one;
  private readonly newest;
  private readonly newestOfKind;

  constructor(db: Db) {
    this.insert =
      db.prepare(`INSERT INTO checks (id, kind, started_at, ended_at, by_user, pattern, nodes, flagged, result)
      VALUES (@id, @kind, @startedAt, @endedAt, @by, @pattern, @nodes, @flagged, @result)`);
    this.one = db.prepare('SELECT result FROM checks WHERE id = ?');
    this.newest = db.prepare('SELECT * FROM checks ORDER BY started_at DESC, rowid DESC LIMIT ?');
    this.newestOfKind = db.prepare('SELECT * FROM checks WHERE kind = ? ORDER BY started_at DESC, rowid DESC LIMIT ?');
  }

  save(result: CheckResult, nodes: number): void {
    this.insert.run({
      id: result.id,
      kind: result.kind,
      startedAt: result.startedAt,
      endedAt: result.endedAt,
      by: result.by,
      pattern: result.pattern,
      nodes,
      flagged: JSON.stringify(result.flagged),
      result: JSON.stringify(result),
    });
  }

  get(id: string): CheckResult | null {
    const row = this.one.get(id) as { result: string } | undefined;
    return row ? (JSON.parse(row.result) as CheckResult) : null;
  }

  list(kind: CheckKind | undefined, limit: number): CheckSummary[] {
    const rows = (kind === undefined ? this.newest.all(limit) : this.newestOfKind.all(kind, limit)) as Row[];
    return rows.map((r) => ({
      id: r.id,
      kind: r.kind,
      startedAt: r.started_at,
      endedAt: r.ended_at,
      by: r.by_user,
      pattern: r.pattern,
      nodes: r.nodes,
      flagged: JSON.parse(r.flagged) as string[],
    }));
  }
}
