// Conformance with hwloc on its own Linux test corpus: for each of the 47 captured
// sysfs/procfs trees, the Package, NUMANode, Core and PU counts must equal hwloc's, in
// its default (allowed) view and, where the corpus pins it, in the whole-hardware view
// and with GPU-memory NUMA nodes kept.
import t from 'tap';
import { readdirSync } from 'node:fs';
import { join } from 'node:path';
import { readFacts } from '@rankd/topology';
import type { Facts } from '@rankd/protocol';
import { CORPUS, corpusPresent, extractDump, loadExpectations, type ExpectedCounts } from './corpus.js';

function pick(
  expected: ExpectedCounts,
  actual: ExpectedCounts,
): { expected: Partial<ExpectedCounts>; actual: Partial<ExpectedCounts> } {
  const e: Partial<ExpectedCounts> = {};
  const a: Partial<ExpectedCounts> = {};
  for (const k of ['packages', 'numaNodes', 'cores', 'pus'] as const) {
    if (expected[k] === null || expected[k] === undefined) continue; // hwloc's tests leave it open
    e[k] = expected[k];
    a[k] = actual[k];
  }
  return { expected: e, actual: a };
}

function allowedCounts(f: Facts): ExpectedCounts {
  return { packages: f.cpu.packages, numaNodes: f.cpu.numaNodes ?? null, cores: f.cpu.cores, pus: f.cpu.pus };
}

function gpuNodesKept(f: Facts): ExpectedCounts {
  const allowed = new Set(f.numa.allowed ?? f.numa.nodes.map((n) => n.id));
  return { ...allowedCounts(f), numaNodes: f.numa.nodes.filter((n) => allowed.has(n.id)).length };
}

if (!corpusPresent()) {
  t.test('hwloc conformance corpus', { skip: `corpus not found at ${CORPUS}: conformance skipped` }, (t) => t.end());
} else {
  const expectations = loadExpectations();
  const tarballs = readdirSync(join(CORPUS, 'tarballs'))
    .filter((f) => f.endsWith('.tar.bz2'))
    .sort();
  t.equal(tarballs.length, expectations.size, 'every tarball has expectations');
  for (const tarball of tarballs) {
    t.test(tarball, (t) => {
      const expectation = expectations.get(tarball);
      if (!expectation) return t.fail(`no expectation for ${tarball}`);
      const dump = extractDump(tarball, expectation);
      t.teardown(dump.cleanup);
      const facts = readFacts({ root: dump.root });
      const allowed = pick(expectation.allowed, allowedCounts(facts));
      t.same(allowed.actual, allowed.expected, 'allowed view (hwloc default)');
      if (expectation.disallowed) {
        const hw = pick(expectation.disallowed, facts.cpu.hardware);
        t.same(hw.actual, hw.expected, 'whole hardware (lstopo --disallowed)');
      }
      if (expectation.gpuNumaNodesKept) {
        const kept = pick(expectation.gpuNumaNodesKept, gpuNodesKept(facts));
        t.same(kept.actual, kept.expected, 'GPU-memory NUMA nodes kept (HWLOC_KEEP_NVIDIA_GPU_NUMA_NODES=1)');
      }
      t.end();
    });
  }
}
