// `rankd facts`: local reads under --root, the formats, usage errors, and a node's facts
// as the controller holds them (a real controller and agent on loopback).
import t from 'tap';
import type { Facts } from '@rankd/protocol';
import { factsHash, readFacts, renderFacts } from '@rankd/topology';
import { buildSysfs, type MachineSpec } from '../helpers/sysfs-fixture.js';
import { runCli, startAgent, startController, waitForNode } from '../helpers/daemons.js';

const machine: MachineSpec = {
  packages: 2,
  coresPerPackage: 2,
  threadsPerCore: 2,
  host: { hostname: 'fixture-node' },
  nics: [{ name: 'ens1f0', pci: '0000:3b:00.0', numaNode: 1 }],
  rdma: [
    {
      name: 'mlx5_0',
      pci: '0000:3b:00.0',
      nodeGuid: 'b8599f0300d4e0a2',
      ports: [{ linkLayer: 'InfiniBand', gids: [{ gid: 'fe80:0000:0000:0000:b859:9f03:00d4:e0a2' }] }],
    },
  ],
};

t.test('local facts under --root, as JSON and in every format', async (t) => {
  const root = buildSysfs(t.testdir(), machine);
  const json = await runCli(['facts', '--root', root, '--json']);
  t.equal(json.code, 0, json.stderr);
  const facts = JSON.parse(json.stdout) as Facts;
  t.equal(factsHash(facts), factsHash(readFacts({ root })));
  t.equal(facts.host.hostname, 'fixture-node');
  for (const format of ['ibv_devinfo', 'lscpu'] as const) {
    const r = await runCli(['facts', '--root', root, '--format', format]);
    t.equal(r.code, 0, `${format}: ${r.stderr}`);
    t.equal(r.stdout, renderFacts(readFacts({ root }), format), format);
  }
  const summary = await runCli(['facts', '--root', root]);
  t.match(summary.stdout, /^host +fixture-node/, 'summary is the default');
});

t.test('usage errors exit 64', async (t) => {
  for (const args of [
    ['facts', '--json', '--format', 'lscpu'],
    ['facts', '--format', 'lstopo'],
    ['facts', 'node-a', '--root', '/tmp'],
  ]) {
    const r = await runCli(args);
    t.equal(r.code, 64, args.join(' '));
    t.match(r.stderr, /^rankd: /);
  }
});

t.test("a node's facts from the controller", async (t) => {
  const root = buildSysfs(t.testdir(), machine);
  const controller = await startController();
  t.teardown(() => controller.stop());
  const agent = startAgent(controller, { name: 'node-a', root });
  t.teardown(() => agent.stop());
  await waitForNode(controller, 'node-a', 'ready');
  const env = { ...controller.clientEnv };

  const r = await runCli(['facts', 'node-a', '--json'], env);
  t.equal(r.code, 0, r.stderr);
  const facts = JSON.parse(r.stdout) as Facts;
  t.equal(factsHash(facts), factsHash(readFacts({ root })), 'what the agent read under its --root');

  const devices = await runCli(['facts', 'node-a', '--format', 'ibv_devices'], env);
  t.equal(devices.stdout, renderFacts(readFacts({ root }), 'ibv_devices'));

  const missing = await runCli(['facts', 'no-such-node'], env);
  t.equal(missing.code, 65);
  t.match(missing.stderr, /no-such-node/);
});
