// The controller's data directory (CA key, admin token, rankd.db and its WAL, which hold
// submitted environments, audit.jsonl, job logs) is 0700 with 0600 files: created so under
// a umask that would allow anything, and tightened at start when an older release (or a
// careless admin) left it open.
import { chmodSync, existsSync, readdirSync, statSync } from 'node:fs';
import { join } from 'node:path';
import t, { type Test } from 'tap';
import { startController } from '../helpers/daemons.js';
import { scratchDir } from '../helpers/scratch.js';

/** Every path in the data directory (one level, and logs/) with its permission bits. */
function modes(dataDir: string): Record<string, string> {
  const out: Record<string, string> = { '.': (statSync(dataDir).mode & 0o777).toString(8) };
  for (const name of readdirSync(dataDir)) out[name] = (statSync(join(dataDir, name)).mode & 0o777).toString(8);
  return out;
}

const EXPECTED = [
  '.',
  'api-token',
  'audit.jsonl',
  'ca-bundle.crt',
  'ca.crt',
  'ca.key',
  'controller.json',
  'logs',
  'rankd.db',
  'rankd.db-shm',
  'rankd.db-wal',
  'server.crt',
  'server.key',
];

function tight(t: Test, dataDir: string): void {
  const seen = modes(dataDir);
  t.same(
    Object.keys(seen)
      .filter((k) => EXPECTED.includes(k))
      .sort(),
    [...EXPECTED].sort(),
    'every file of a running controller is there to check',
  );
  for (const [name, mode] of Object.entries(seen)) {
    const dir = name === '.' || statSync(join(dataDir, name)).isDirectory();
    t.equal(mode, dir ? '700' : '600', `${name} is ${dir ? '0700' : '0600'}`);
  }
}

t.test('created under umask 000: the directory 0700, rankd.db, its WAL and every other file 0600', async (t) => {
  const parent = scratchDir('rankd-modes-');
  const dataDir = join(parent, 'data');
  const before = process.umask(0o000);
  let controller: Awaited<ReturnType<typeof startController>> | undefined;
  try {
    controller = await startController({ dataDir });
  } finally {
    process.umask(before);
  }
  t.teardown(() => controller?.stop());
  t.ok(existsSync(join(dataDir, 'rankd.db-wal')), 'the WAL exists');
  tight(t, dataDir);
});

t.test('an existing directory with loose modes is tightened at start', async (t) => {
  const dataDir = scratchDir('rankd-modes-');
  const first = await startController({ dataDir });
  await first.stop();
  // as an older release left it, or worse
  chmodSync(dataDir, 0o777);
  for (const name of readdirSync(dataDir))
    chmodSync(join(dataDir, name), statSync(join(dataDir, name)).isDirectory() ? 0o777 : 0o666);
  t.equal(modes(dataDir)['rankd.db'], '666', 'loosened for the test');
  const second = await startController({ dataDir });
  t.teardown(() => second.stop());
  tight(t, dataDir);
  t.match(second.output(), /modes tightened/, 'and the controller says so');
});
