// The sweep's output parser on what rankd's benchmark really printed (3 MPICH ranks, 8 B to
// 4 MiB, through allreduce-check.sh, on this 2-core machine under load), on nccl-tests'
// layouts, and on broken output; the job the controller builds for a sweep; the transport
// variables it records.
import t from 'tap';
import { existsSync, readFileSync } from 'node:fs';
import { fileURLToPath } from 'node:url';
import { parseSweepOutput } from '#controller/checks/allreduce-output';
import { ALLREDUCE_LAUNCHER, allreduceJob, sizeCount, sweepSizes } from '#controller/checks/allreduce-job';
import { transportEnv } from '#controller/checks/allreduce-env';
import { renderAllreduce } from '#cli/checks/allreduce-report';

const REAL = readFileSync(fileURLToPath(new URL('./fixtures/allreduce-rankd-mpi-3ranks.txt', import.meta.url)), 'utf8');

t.test("rankd's benchmark, as rank 0 printed it", async (t) => {
  const out = parseSweepOutput(REAL);
  t.equal(out.implementation, 'rankd-mpi');
  t.equal(out.worldSize, 3, 'three "#  Rank" lines: the world it ran in');
  t.ok(out.complete, 'the closing line was printed');
  t.same(out.problems, []);
  t.same(
    out.rows.map((r) => r.bytes),
    Array.from({ length: 20 }, (_, i) => 8 * 2 ** i),
    '8 B to 4 MiB, doubling',
  );
  const factor = (2 * (3 - 1)) / 3;
  for (const r of out.rows) {
    t.equal(r.type, 'float');
    t.equal(r.count * 4, r.bytes);
    t.equal(r.wrong, 0);
    // busbw from the printed time: bytes / time × 2(n−1)/n, to the 2 decimals it is printed with
    const fromTime = (r.bytes / (r.timeUs * 1e3)) * factor;
    t.ok(Math.abs(r.busbwGBs - fromTime) <= 0.005 + 1e-9, `${r.bytes} B: busbw ${r.busbwGBs} ≈ ${fromTime}`);
  }
  t.ok(
    out.rows.some((r) => r.busbwGBs > 0),
    'the largest sizes moved enough for a bandwidth to show in two decimals',
  );
});

const NCCL_HEADER = [
  '# nThread 1 nGpus 1 minBytes 8 maxBytes 16 step: 2(factor) warmup' +
    ' iters: 5 iters: 20 agg iters: 1 validation: 1 graph: 0',
  '#',
  '# Using devices',
  '#  Rank  0 Group  0 Pid  40001 on      gpu-a device  0 [0x17] NVIDIA H100 80GB HBM3',
  '#  Rank  1 Group  0 Pid  40002 on      gpu-b device  0 [0x17] NVIDIA H100 80GB HBM3',
  '#',
];

t.test("nccl-tests' layouts: with the root column and without (before 2.10)", async (t) => {
  const withRoot = parseSweepOutput(
    [
      '# rankd check allreduce: implementation=nccl-tests program=/usr/bin/all_reduce_perf node=gpu-a',
      ...NCCL_HEADER,
      '#       size         count      type   redop    root     time' +
        '   algbw   busbw #wrong     time   algbw   busbw #wrong',
      '           8             2     float     sum      -1    20.10' +
        '    0.00    0.00      0    19.80    0.00    0.00      0',
      '    16777216       4194304     float     sum      -1    412.5' +
        '   40.67   40.67      0    410.1   40.91   40.91      2',
      '# Out of bounds values : 2 FAILED',
    ].join('\n'),
  );
  t.equal(withRoot.implementation, 'nccl-tests');
  t.equal(withRoot.worldSize, 2);
  t.same(
    withRoot.rows[1],
    {
      bytes: 16777216,
      count: 4194304,
      type: 'float',
      timeUs: 412.5,
      algbwGBs: 40.67,
      busbwGBs: 40.67,
      wrong: 2,
    },
    'out-of-place figures, and #wrong of both runs',
  );
  const noRoot = parseSweepOutput(
    [
      ...NCCL_HEADER,
      '#       size         count      type   redop     time   algbw   busbw  error     time   algbw   busbw  error',
      '     1048576        262144     float     sum    60.25   17.40   17.40      0    60.01   17.47   17.47      0',
    ].join('\n'),
  );
  t.same(
    noRoot.rows.map((r) => [r.bytes, r.timeUs, r.algbwGBs, r.busbwGBs, r.wrong]),
    [[1048576, 60.25, 17.4, 17.4, 0]],
  );
  t.notOk(noRoot.complete, 'no closing line: the sweep did not finish');
  t.equal(noRoot.implementation, null, 'no launcher line: unknown');
});

t.test('what cannot be read is reported, never skipped', async (t) => {
  const out = parseSweepOutput(
    [
      '#       size         count      type   redop    root     time' +
        '   algbw   busbw #wrong     time   algbw   busbw #wrong',
      '           8             2     float     sum      -1    20.10' +
        '    0.00    0.00    N/A    19.80    0.00    0.00    N/A',
      '          16             4     float',
      'gpu-a: Test NCCL failure common.cu:1005 unhandled system error',
    ].join('\n'),
  );
  t.same(out.rows, []);
  t.equal(out.problems.length, 2);
  t.match(out.problems[0], /#wrong is not checked/);
  t.match(out.problems[1], /a row of 3 columns/);
});

t.test("the sweep's job: a fixed program, numbers, the caller's placement and user", async (t) => {
  const placement = { nodes: 3, env: { UCX_TLS: 'tcp,self' } };
  const sizes = sweepSizes({ placement, maxBytes: 1024 * 1024 });
  t.same(sizes, { minBytes: 8, maxBytes: 1048576, iterations: 20 });
  t.equal(sizeCount(sizes), 18);
  const job = allreduceJob({ placement }, sizes, 'alice');
  t.same(job.command, [
    '/bin/sh',
    ALLREDUCE_LAUNCHER,
    '--min-bytes',
    '8',
    '--max-bytes',
    '1048576',
    '--iterations',
    '20',
  ]);
  t.ok(existsSync(ALLREDUCE_LAUNCHER), `the build put the launcher at ${ALLREDUCE_LAUNCHER}`);
  t.ok(existsSync(ALLREDUCE_LAUNCHER.replace(/allreduce-check\.sh$/, 'allreduce-bench.c')), 'and the source beside it');
  t.same(job.placement, placement);
  t.equal(job.user, 'alice');
  t.equal(job.mpi, 'pmi1');
  t.equal(job.immediate, true, 'a check never waits in the queue');
  t.equal(job.timeout, 60 + 20 * 18, 'the default timeout grows with the sizes');
  t.equal(allreduceJob({ placement, timeout: 30 }, sizes, undefined).user, undefined, 'no Unix user: none named');
  t.same(sweepSizes({ placement }), { minBytes: 8, maxBytes: 256 * 1024 * 1024, iterations: 20 }, '8 B to 256 MiB');
  t.throws(() => sweepSizes({ placement, minBytes: 4096, maxBytes: 1024 }), {
    code: 'RANKD_CHECK_SIZES_INVALID',
    message: /--min-bytes 4096 is above --max-bytes 1024/,
  });
});

t.test("the transport environment: the planner's fabric variables, not the rank's identity", async (t) => {
  t.same(
    transportEnv({
      NCCL_IB_HCA: '=mlx5_0:1',
      NCCL_IB_GID_INDEX: '3',
      UCX_NET_DEVICES: 'mlx5_0:1',
      UCX_TLS: 'tcp,self',
      CCL_MNIC: 'local',
      CCL_LOCAL_RANK: '0',
      FI_VERBS_IFACE: 'eth1',
      GLOO_SOCKET_IFNAME: 'eth0',
      RANK: '0',
      PATH: '/usr/bin',
    }),
    {
      CCL_MNIC: 'local',
      FI_VERBS_IFACE: 'eth1',
      GLOO_SOCKET_IFNAME: 'eth0',
      NCCL_IB_GID_INDEX: '3',
      NCCL_IB_HCA: '=mlx5_0:1',
      UCX_NET_DEVICES: 'mlx5_0:1',
      UCX_TLS: 'tcp,self',
    },
  );
});

t.test("the CLI's table: nccl-tests' columns, the env, the verdict", async (t) => {
  const rows = parseSweepOutput(REAL).rows;
  const base = {
    id: 'c-x',
    kind: 'allreduce' as const,
    startedAt: 0,
    endedAt: 12_000,
    by: 'admin',
    pattern: 'host1,host2,host3',
    jobId: 'j1',
    ranks: 3,
    nodes: ['host1', 'host2', 'host3'],
    implementation: 'rankd-mpi' as const,
    env: { UCX_TLS: 'tcp,self' },
    rows,
    wrong: 0,
    flagged: [],
    message: null,
  };
  const ok = renderAllreduce(base);
  t.match(ok, /size \(B\)\s+count\s+type\s+time \(us\)\s+algbw \(GB\/s\)\s+busbw \(GB\/s\)\s+#wrong/);
  t.match(ok, /\n\s+4194304\s+1048576\s+float\s+[\d.]+\s+0\.03\s+0\.04\s+0\n/);
  t.match(ok, /transport env:\n {2}UCX_TLS=tcp,self\n/);
  t.match(ok, /ok: 20 sizes, every element summed right/);
  const bad = renderAllreduce({ ...base, wrong: 2, flagged: base.nodes, message: '2 reduced elements were wrong' });
  t.match(bad, /FLAGGED: host1, host2, host3/);
  t.notMatch(bad, /^ok:/m);
});
