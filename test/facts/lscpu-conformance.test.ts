// `lscpu -p` conformance on the hwloc corpus: for every dump, the facts read from its
// root and rendered as lscpu must equal what util-linux's lscpu prints for the same root
// (`lscpu -s ROOT -p`), byte for byte, the comment lines included. lscpu runs for real:
// Debian's util-linux 2.38.1 is the oracle. It runs under LC_ALL=C, since its first three
// comment lines are translated text.
//
// lscpu cannot read some captures at all. Those are listed below with the reason, and each
// is checked to still fail that way, so the list cannot outlive its reason. The ones whose
// only lack is cpu/possible are compared anyway, with a possible file written from their
// cpuN folders (what the kernel lists on a machine without hot-plug slots): rankd and
// lscpu then read the same tree. allowed_test1.fsroot is compared as conformance.test.ts
// reads it: the fixture builder's sysfs for its synthetic topology under its cgroup files.
import t from 'tap';
import { spawnSync } from 'node:child_process';
import { existsSync, readdirSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { readFacts, renderFacts } from '@rankd/topology';
import { CORPUS, corpusPresent, extractDump, loadExpectations } from './corpus.js';
import { cpuList } from '../helpers/sysfs-fixture/tree.js';

const POSSIBLE = 'sys/devices/system/cpu/possible';

interface CannotRead {
  why: string;
  /** How lscpu fails on the tree as captured. */
  fails: { stderr: RegExp } | { signal: NodeJS.Signals };
  /** Compared after writing cpu/possible from the cpuN folders. */
  withPossible: boolean;
  trees: string[];
}

const CANNOT_READ: CannotRead[] = [
  {
    why: 'the capture has no cpu/possible (older kernels, or hwloc did not save it); lscpu builds its CPU list from that file alone',
    fails: { stderr: /failed to determine number of CPUs: \/sys\/devices\/system\/cpu\/possible/ },
    withPossible: true,
    trees: [
      '128ia64-17n4s2c',
      '16em64t-4s2c2t-offlines',
      '16em64t-4s2c2t',
      '16em64t-4s2ca2c-cpusetreorder',
      '16ia64-8n2s',
      '256ia64-64n2s2c',
      '256ppc-8n8s4t',
      '2i386-2c-nohugepage',
      '64intel64-fakeKNL-A2A-cache',
      '64intel64-fakeKNL-SNC4-hybrid',
      '8ia64-2s2c2t',
      '96em64t-4no4pa3ca2co',
    ],
  },
  {
    why: 'the capture has neither cpu/possible nor /proc/cpuinfo, and lscpu exits without either',
    fails: { stderr: /failed to determine number of CPUs/ },
    withPossible: false,
    trees: ['4fake-4gr1nu1pu', '64fake-4n2s2ca2c2t', '8ia64-2n2s2c', 'fakeheterocpunuma'],
  },
  {
    why: 'cpu0 has thread_siblings but no core_siblings: lscpu stores a null socket set for it and dereferences it at the next CPU',
    fails: { signal: 'SIGSEGV' },
    withPossible: false,
    trees: ['2ps3-2t'],
  },
];

function lscpu(root: string) {
  const env: NodeJS.ProcessEnv = { ...process.env, LC_ALL: 'C' };
  delete env['LANGUAGE'];
  return spawnSync('lscpu', ['-s', root, '-p'], { encoding: 'utf8', env, timeout: 20_000 });
}

const lscpuMissing = spawnSync('lscpu', ['--version'], { encoding: 'utf8' }).status !== 0;

function cpuFolders(root: string): number[] {
  return readdirSync(join(root, 'sys/devices/system/cpu'))
    .filter((n) => /^cpu\d+$/.test(n))
    .map((n) => Number(n.slice(3)))
    .sort((a, b) => a - b);
}

if (!corpusPresent()) {
  t.test('lscpu -p on the hwloc corpus', { skip: `corpus not found at ${CORPUS}: conformance skipped` }, (t) =>
    t.end(),
  );
} else if (lscpuMissing && process.env['CI'] !== 'true') {
  t.test(
    'lscpu -p on the hwloc corpus',
    { skip: 'lscpu is not installed here (util-linux): comparison skipped' },
    (t) => t.end(),
  );
} else {
  const expectations = loadExpectations();
  const tarballs = readdirSync(join(CORPUS, 'tarballs'))
    .filter((f) => f.endsWith('.tar.bz2'))
    .sort();
  const listed = new Map(CANNOT_READ.flatMap((c) => c.trees.map((name) => [name, c] as const)));

  t.test('every tree named in the list is in the corpus', (t) => {
    const names = new Set(tarballs.map((f) => f.replace(/\.tar\.bz2$/, '')));
    t.same(
      [...listed.keys()].filter((n) => !names.has(n)),
      [],
    );
    t.end();
  });

  let matched = 0;
  for (const tarball of tarballs) {
    const name = tarball.replace(/\.tar\.bz2$/, '');
    t.test(name, (t) => {
      const dump = extractDump(tarball, expectations.get(tarball)!);
      t.teardown(dump.cleanup);
      const asCaptured = lscpu(dump.root);
      const known = listed.get(name);
      if (known) {
        const how =
          'signal' in known.fails
            ? asCaptured.signal === known.fails.signal
            : known.fails.stderr.test(asCaptured.stderr);
        t.ok(how, `lscpu still fails as listed: ${known.why}`, {
          status: asCaptured.status,
          signal: asCaptured.signal,
          stderr: asCaptured.stderr,
        });
        if (!known.withPossible) return t.end();
        t.notOk(existsSync(join(dump.root, POSSIBLE)), 'the capture has no cpu/possible');
        writeFileSync(join(dump.root, POSSIBLE), cpuList(cpuFolders(dump.root)) + '\n');
      }
      const theirs = known ? lscpu(dump.root) : asCaptured;
      t.equal(theirs.status, 0, 'lscpu reads the tree', { stderr: theirs.stderr, signal: theirs.signal });
      const ours = renderFacts(readFacts({ root: dump.root }), 'lscpu');
      if (t.equal(ours, theirs.stdout, 'rankd facts --format lscpu is lscpu -p, byte for byte')) matched++;
      t.end();
    });
  }

  t.test('summary', (t) => {
    const comparable =
      tarballs.length - CANNOT_READ.filter((c) => !c.withPossible).reduce((n, c) => n + c.trees.length, 0);
    t.equal(matched, comparable, `${matched} of ${tarballs.length} trees equal lscpu -p (${comparable} comparable)`);
    t.end();
  });
}
