// The time order of `rankd logs` on a real SQLite store: a job's output chunks come back in
// the order they were stored, across ranks, without another job's (even one whose id starts
// with this one's), whether they were stored before the reader came or after; and a long
// job's chunks come back complete, in order, beside another job's.
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import t, { type Test } from 'tap';
import { openDatabase } from '#controller/store/database';
import { EventsRepo } from '#controller/store/events-repo';
import { LogTimeline } from '#controller/jobs/log-timeline';

function store(t: Test) {
  const dir = mkdtempSync(join(tmpdir(), 'rankd-timeline-'));
  const db = openDatabase(dir);
  t.teardown(() => {
    db.close();
    rmSync(dir, { recursive: true, force: true });
  });
  const events = new EventsRepo(db);
  const offsets = new Map<string, number>();
  /** Stores `bytes` more of a rank's stream, as RankEvents records a stored chunk. */
  const output = (job: string, rank: number, stream: 'stdout' | 'stderr', bytes: number, at: number) => {
    const key = `${job}/${rank}/${stream}`;
    const offset = offsets.get(key) ?? 0;
    offsets.set(key, offset + bytes);
    events.append('rank.output', `${job}/${rank}`, { stream, offset, bytes }, at);
  };
  return { db, events, output };
}

function drain(timeline: LogTimeline): Array<{ id: number; rank: number; stream: string; offset: number; at: number }> {
  const out = [];
  for (let e = timeline.next(); e; e = timeline.next())
    out.push({ id: e.id, rank: e.rank, stream: e.stream, offset: e.offset, at: e.at });
  return out;
}

t.test('stored and later chunks, across ranks, in the order stored; other jobs left out', async (t) => {
  const { events, output } = store(t);
  // job "j1" and a job "j10" whose id starts with it, interleaved; rank starts are events too
  events.append('rank.started', 'j1/0', {});
  const want: number[] = [];
  for (let i = 0; i < 300; i++) {
    const rank = (i * 7) % 5;
    output('j1', rank, i % 3 === 0 ? 'stderr' : 'stdout', 10, 1000 + i);
    want.push(1000 + i);
    output('j10', rank, 'stdout', 5, 5000 + i);
    output('j1-x', rank, 'stdout', 5, 6000 + i);
  }
  const timeline = new LogTimeline(events, 'j1', [0, 1, 2, 3, 4]);
  // stored after the reader came: they follow, still in order
  for (let i = 300; i < 310; i++) {
    output('j10', 0, 'stdout', 5, 5000 + i);
    output('j1', i % 5, 'stdout', 10, 1000 + i);
    want.push(1000 + i);
  }
  const got = drain(timeline);
  t.same(
    got.map((e) => e.at),
    want,
    'every chunk of j1, in the order stored, and nothing of j10 or j1-x',
  );
  t.ok(
    got.every((e, i) => i === 0 || e.id > got[i - 1]!.id),
    'ids increase',
  );
  t.equal(timeline.next(), null, 'nothing more stored yet');
  output('j1', 2, 'stderr', 3, 9999);
  t.same(
    drain(timeline).map((e) => [e.rank, e.stream, e.at]),
    [[2, 'stderr', 9999]],
    'a chunk stored later is read when it is',
  );
});

t.test('only the ranks asked for', async (t) => {
  const { events, output } = store(t);
  for (let i = 0; i < 40; i++) output('job', i % 4, 'stdout', 1, i);
  const got = drain(new LogTimeline(events, 'job', [1, 3]));
  t.same(
    got.map((e) => e.rank),
    Array.from({ length: 20 }, (_, i) => (i % 2 === 0 ? 1 : 3)),
  );
});

t.test('a long job: 100,000 chunks of 8 ranks, in order, beside another job of as many', async (t) => {
  const { db, events, output } = store(t);
  db.transaction(() => {
    for (let i = 0; i < 100_000; i++) output('long', i % 8, 'stdout', 1, i);
    for (let i = 0; i < 100_000; i++) output('other', i % 8, 'stdout', 1, i);
  })();
  const timeline = new LogTimeline(events, 'long', [0, 1, 2, 3, 4, 5, 6, 7]);
  let n = 0;
  let last = -1;
  let ordered = true;
  for (let e = timeline.next(); e; e = timeline.next()) {
    if (e.at !== last + 1) ordered = false;
    last = e.at;
    n++;
  }
  t.equal(n, 100_000);
  t.ok(ordered, 'in the order stored');
});
