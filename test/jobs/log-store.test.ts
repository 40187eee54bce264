// The controller's log store on real files with a small descriptor cache: more streams
// than open descriptors, every byte still stored once, in place, and read back.
import { existsSync, mkdtempSync, readdirSync, readlinkSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import t from 'tap';
import { LogStore } from '#controller/jobs/log-store';

/** Descriptors of this process that point into dir. */
function openInto(dir: string): number {
  return readdirSync('/proc/self/fd').filter((fd) => {
    try {
      return readlinkSync(`/proc/self/fd/${fd}`).startsWith(dir);
    } catch {
      return false;
    }
  }).length;
}

t.test('40 streams through 3 descriptors: sizes, duplicates, gaps and reads stay right', async (t) => {
  const dir = mkdtempSync(join(tmpdir(), 'rankd-logs-'));
  t.teardown(() => rmSync(dir, { recursive: true, force: true }));
  const store = new LogStore(dir, 3);
  t.same(store.open('job1', 0), { stdout: 0, stderr: 0 });
  t.notOk(existsSync(store.path('job1', 0, 'stdout')), 'no file before the first byte');
  t.same(store.read('job1', 0, 'stdout', 0, 100), Buffer.alloc(0));

  for (let round = 0; round < 3; round++) {
    for (let rank = 0; rank < 20; rank++) {
      for (const stream of ['stdout', 'stderr'] as const) {
        const line = Buffer.from(`${stream} of ${rank}, round ${round}\n`);
        const offset = store.size('job1', rank, stream);
        t.same(store.append('job1', rank, stream, offset, line), { kind: 'stored', bytes: line.length });
        t.same(
          store.append('job1', rank, stream, offset, line),
          { kind: 'duplicate' },
          'a resent chunk is stored once',
        );
      }
    }
    t.ok(store.openDescriptors <= 3, `round ${round}: at most 3 descriptors open`);
    t.ok(openInto(dir) <= 3, `round ${round}: the process holds at most 3 descriptors into the store`);
  }
  t.same(store.append('job1', 5, 'stdout', 10_000, Buffer.from('x')), {
    kind: 'gap',
    expected: store.size('job1', 5, 'stdout'),
  });
  for (let rank = 0; rank < 20; rank++) {
    const text = store.read('job1', rank, 'stderr', 0, 1 << 20).toString();
    t.equal(
      text,
      [0, 1, 2].map((round) => `stderr of ${rank}, round ${round}\n`).join(''),
      `rank ${rank}: every line, in order`,
    );
  }

  // a new store (a restarted controller) learns the sizes from the files
  store.closeAll();
  t.equal(openInto(dir), 0, 'closeAll closes every descriptor');
  const again = new LogStore(dir, 3);
  t.same(again.open('job1', 7), { stdout: store.size('job1', 7, 'stdout'), stderr: store.size('job1', 7, 'stderr') });
  t.ok(again.size('job1', 7, 'stdout') > 0);
  again.closeAll();
});

t.test('a job begun in this store has nothing stored until it writes, then its files are the truth', async (t) => {
  const dir = mkdtempSync(join(tmpdir(), 'rankd-logs-'));
  t.teardown(() => rmSync(dir, { recursive: true, force: true }));
  const store = new LogStore(dir, 3);
  store.begin('fresh');
  t.same([store.size('fresh', 15_999, 'stdout'), store.size('fresh', 15_999, 'stderr')], [0, 0]);
  t.notOk(existsSync(join(dir, 'fresh')), 'beginning a job creates nothing on disk');
  t.same(store.append('fresh', 3, 'stdout', 0, Buffer.from('hello\n')), { kind: 'stored', bytes: 6 });
  t.same(store.append('fresh', 3, 'stdout', 0, Buffer.from('hello\n')), { kind: 'duplicate' });
  t.same(store.append('fresh', 3, 'stdout', 9, Buffer.from('x')), { kind: 'gap', expected: 6 });
  t.equal(store.read('fresh', 3, 'stdout', 0, 100).toString(), 'hello\n');
  // once closed, the job is no longer taken as empty: sizes come from its files again
  store.close('fresh');
  t.equal(store.size('fresh', 3, 'stdout'), 6);
  store.closeAll();
});
