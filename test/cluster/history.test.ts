// The history checker on histories written by hand: a sound one passes, and each broken
// invariant is found and named. (The cluster tests run it on the real event logs.)
import t from 'tap';
import { checkHistory, type HistoryEvent } from './harness/history.js';

let nextId = 1;
const ev = (kind: string, subject: string, data: Record<string, unknown> = {}): HistoryEvent => ({
  id: nextId++,
  at: Date.now(),
  kind,
  subject,
  data,
});

/** A two-rank job that succeeded, with output on both ranks and a controller restart in between. */
function sound(job = 'j1'): HistoryEvent[] {
  return [
    ev('job.submitted', job, { worldSize: 2, nodes: ['a', 'b'] }),
    ev('job.state', job, { from: 'pending', to: 'starting' }),
    ev('rank.started', `${job}/0`, { node: 'a', pid: 10 }),
    ev('rank.started', `${job}/1`, { node: 'b', pid: 11 }),
    ev('job.state', job, { from: 'starting', to: 'running' }),
    ev('rank.output', `${job}/0`, { stream: 'stdout', offset: 0, bytes: 6 }),
    ev('rank.output', `${job}/1`, { stream: 'stderr', offset: 0, bytes: 4 }),
    // the controller restarted after storing 3 more bytes without their event
    ev('rank.output.size', `${job}/0`, { stdout: 9, stderr: 0 }),
    ev('rank.output.size', `${job}/1`, { stdout: 0, stderr: 4 }),
    ev('rank.output', `${job}/0`, { stream: 'stdout', offset: 9, bytes: 1 }),
    ev('rank.exited', `${job}/0`, { node: 'a', state: 'exited', code: 0, signal: null, stdout: 10, stderr: 0 }),
    ev('rank.exited', `${job}/1`, { node: 'b', state: 'exited', code: 0, signal: null, stdout: 0, stderr: 4 }),
    ev('job.state', job, { from: 'running', to: 'succeeded' }),
  ];
}

const sizes = (map: Record<string, number>) => (job: string, rank: number, stream: string) =>
  map[`${job}/${rank}.${stream}`] ?? 0;

t.test('a sound history has no problem', async (t) => {
  t.same(checkHistory({ events: sound(), logSize: sizes({ 'j1/0.stdout': 10, 'j1/1.stderr': 4 }) }), []);
});

t.test('a rank with two terminal states, or none', async (t) => {
  const twice = sound();
  twice.splice(11, 0, ev('rank.exited', 'j1/0', { state: 'exited', code: 0, signal: null, stdout: 10, stderr: 0 }));
  t.match(checkHistory({ events: twice }), [/j1\/0: terminal state recorded 2 times/]);

  const none = sound().filter((e) => !(e.kind === 'rank.exited' && e.subject === 'j1/1'));
  t.match(checkHistory({ events: none }), [/j1\/1: the job ended succeeded but the rank has no terminal state/]);
});

t.test('log offsets with a gap, an overlap, a loss at restart, or an exit that disagrees', async (t) => {
  const gap = sound();
  gap.splice(6, 0, ev('rank.output', 'j1/1', { stream: 'stderr', offset: 8, bytes: 2 }));
  t.match(checkHistory({ events: gap }).join('\n'), /j1\/1 stderr: an overlap|j1\/1 stderr: a gap/);

  const hole = sound().map((e) =>
    e.kind === 'rank.output' && e.subject === 'j1/0' && e.data['offset'] === 9
      ? { ...e, data: { ...e.data, offset: 12 } }
      : e,
  );
  t.match(checkHistory({ events: hole }), [
    /j1\/0 stdout: a gap: chunk at offset 12 .* stored bytes end at 9/,
    /the exit records 10 bytes, the stored offsets reach 13/,
  ]);

  const lost = sound().map((e) =>
    e.kind === 'rank.output.size' && e.subject === 'j1/0' ? { ...e, data: { stdout: 2, stderr: 0 } } : e,
  );
  t.match(checkHistory({ events: lost }).join('\n'), /after a restart 2 bytes are stored, but 6 were recorded/);

  t.match(checkHistory({ events: sound(), logSize: sizes({ 'j1/0.stdout': 11, 'j1/1.stderr': 4 }) }), [
    /j1\/0 stdout: the stored file has 11 bytes, the offsets reach 10/,
  ]);
});

t.test('a rank that runs, ends or writes after its job ended', async (t) => {
  const late = sound();
  const exit1 = late.findIndex((e) => e.kind === 'rank.exited' && e.subject === 'j1/1');
  const [moved] = late.splice(exit1, 1);
  late.push(moved!);
  const problems = checkHistory({ events: late.map((e, i) => ({ ...e, id: i + 1 })) });
  t.match(problems, [/j1\/1: ended exited \(event \d+\) after its job ended succeeded \(event \d+\)/]);

  const restarted = [...sound(), ev('rank.started', 'j1/0', { node: 'a', pid: 12 })];
  t.match(checkHistory({ events: restarted }).join('\n'), /j1\/0: started 2 times/);

  const reopened = [...sound(), ev('job.state', 'j1', { from: 'succeeded', to: 'running' })];
  t.match(checkHistory({ events: reopened }), [/job j1 went from succeeded to running .* after it ended succeeded/]);
});

t.test('a job marked succeeded with a rank unknown, killed or failing', async (t) => {
  for (const [data, what] of [
    [{ state: 'unknown', code: null, signal: null }, /rank 1 ended unknown/],
    [{ state: 'exited', code: null, signal: 'SIGKILL' }, /rank 1 ended exited \(code null, signal SIGKILL\)/],
    [{ state: 'exited', code: 3, signal: null }, /rank 1 ended exited \(code 3, signal null\)/],
  ] as const) {
    const events = sound().map((e) =>
      e.kind === 'rank.exited' && e.subject === 'j1/1' ? { ...e, data: { ...e.data, ...data } } : e,
    );
    t.match(checkHistory({ events }), [new RegExp(`j1: marked succeeded, but ${what.source}`)]);
  }
});

t.test('events for ranks that do not exist', async (t) => {
  const events = [
    ...sound(),
    ev('rank.output', 'j1/2', { stream: 'stdout', offset: 0, bytes: 1 }),
    ev('rank.started', 'nojob/0', { node: 'a', pid: 1 }),
  ];
  const problems = checkHistory({ events });
  t.match(problems.join('\n'), /job j1 has no rank 2 \(world size 2\)/);
  t.match(problems.join('\n'), /subject nojob\/0 is no rank of a submitted job/);
});

t.test('two jobs are checked independently', async (t) => {
  const events = [...sound('a'), ...sound('b')];
  t.same(checkHistory({ events }), []);
});

/** A two-rank job whose attempt 0 failed (rank 1 exited 3) and whose attempt 1 succeeded. */
function restarted(job = 'r1'): HistoryEvent[] {
  const alloc = (attempt: number) => ({ mode: 'cores', nodes: { a: { cpus: [0], gpus: [] } }, attempt });
  const ranks = (id: string, code1: number) => [
    ev('rank.started', `${id}/0`, { node: 'a', pid: 10 }),
    ev('rank.started', `${id}/1`, { node: 'a', pid: 11 }),
    ev('rank.output', `${id}/1`, { stream: 'stderr', offset: 0, bytes: 5 }),
    ev('rank.exited', `${id}/1`, { node: 'a', state: 'exited', code: code1, signal: null, stdout: 0, stderr: 5 }),
    ev('rank.exited', `${id}/0`, {
      node: 'a',
      state: 'exited',
      code: code1 ? null : 0,
      signal: code1 ? 'SIGTERM' : null,
      stdout: 0,
      stderr: 0,
    }),
  ];
  return [
    ev('job.submitted', job, { worldSize: 2, nodes: 1 }),
    ev('job.allocated', job, alloc(0)),
    ev('job.state', job, { from: 'queued', to: 'pending' }),
    ...ranks(job, 3),
    ev('job.attempt', job, { attempt: 0, state: 'failed' }),
    ev('job.state', job, { from: 'pending', to: 'queued' }),
    ev('job.released', job, { attempt: 0 }),
    ev('job.allocated', job, alloc(1)),
    ev('job.state', job, { from: 'queued', to: 'pending' }),
    ...ranks(`${job}-1`, 0),
    ev('job.state', job, { from: 'pending', to: 'succeeded' }),
    ev('job.released', job, { attempt: 1 }),
  ];
}

const renumbered = (events: HistoryEvent[]) => events.map((e, i) => ({ ...e, id: i + 1 }));

t.test('a restarted job: each attempt checked on its own, the last one decides success', async (t) => {
  const files: Record<string, number> = { 'r1/1.stderr': 5, 'r1-1/1.stderr': 5 };
  t.same(checkHistory({ events: restarted(), logSize: sizes(files) }), []);
  t.match(checkHistory({ events: restarted(), logSize: sizes({ ...files, 'r1-1/1.stderr': 7 }) }), [
    /r1-1\/1 stderr: the stored file has 7 bytes, the offsets reach 5/,
  ]);
});

t.test('an attempt allocated twice, skipped, or live beside another', async (t) => {
  const events = restarted();
  const second = events.findIndex((e) => e.kind === 'job.allocated' && e.data['attempt'] === 1);
  const twice = [...events];
  twice.splice(second + 1, 0, { ...events[second]!, id: 0 });
  t.match(checkHistory({ events: renumbered(twice) }).join('\n'), /r1: attempt 1 allocated twice/);

  const skipped = events.map((e) =>
    e.kind.startsWith('job.') && e.data['attempt'] === 1 ? { ...e, data: { ...e.data, attempt: 2 } } : e,
  );
  t.match(
    checkHistory({ events: skipped }).join('\n'),
    /r1: attempt 2 allocated .* after attempt 0: an attempt skipped/,
  );

  // attempt 0's release moved after attempt 1's allocation: two attempts held at once
  const release0 = events.findIndex((e) => e.kind === 'job.released' && e.data['attempt'] === 0);
  const overlapping = [...events];
  const [moved] = overlapping.splice(release0, 1);
  overlapping.splice(release0 + 1, 0, moved!);
  t.match(
    checkHistory({ events: renumbered(overlapping) }).join('\n'),
    /r1: attempt 1 allocated \(event \d+\) while attempt 0 was live: two attempts at once/,
  );
});

t.test('an attempt released twice, never, or before its ranks ended', async (t) => {
  const events = restarted();
  const twice = renumbered([...events, ev('job.released', 'r1', { attempt: 1 })]);
  t.match(checkHistory({ events: twice }), [/r1: attempt 1 released twice/]);

  const never = events.filter((e) => !(e.kind === 'job.released' && e.data['attempt'] === 1));
  t.match(checkHistory({ events: never }), [/r1: the job ended succeeded but attempt 1 was never released/]);

  // attempt 0's rank 0 reports its end after the attempt was released
  const exit0 = events.findIndex((e) => e.kind === 'rank.exited' && e.subject === 'r1/0');
  const release0 = events.findIndex((e) => e.kind === 'job.released' && e.data['attempt'] === 0);
  const late = [...events];
  const [moved] = late.splice(exit0, 1);
  late.splice(release0, 0, moved!);
  const problems = checkHistory({ events: renumbered(late) });
  t.match(problems, [/r1\/0: ended exited \(event \d+\) after its attempt was released \(event \d+\)/]);

  const missing = events.filter((e) => !(e.kind === 'rank.exited' && e.subject === 'r1/0'));
  t.match(checkHistory({ events: missing }), [/r1\/0: attempt 0 was released but the rank has no terminal state/]);
});

t.test('rank events of an attempt that was never allocated', async (t) => {
  const events = [...restarted(), ev('rank.started', 'r1-2/0', { node: 'a', pid: 12 })];
  t.match(checkHistory({ events }), [/subject r1-2\/0 is no rank of a submitted job's attempt/]);
});
