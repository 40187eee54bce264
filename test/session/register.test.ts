// An agent dials the controller, registers, and shows ready in `rankd nodes`.
import t from 'tap';
import { runCli, startAgent, startController, waitForNode } from '../helpers/daemons.js';

t.test('an agent registers and shows ready in rankd nodes', async (t) => {
  const controller = await startController();
  t.teardown(() => controller.stop());
  const agent = startAgent(controller, { name: 'node-a', labels: ['rack=r1', 'gpu=none'] });
  t.teardown(() => agent.stop());

  const node = await waitForNode(controller, 'node-a', 'ready');
  t.equal(node.connected, true);
  t.same(node.labels, { rack: 'r1', gpu: 'none' });
  t.equal(node.address, '127.0.0.1', 'address as the controller sees the agent');
  t.ok(node.cpus && node.cpus >= 1, 'CPU count comes from the facts in the hello');
  t.ok(node.numaNodes && node.numaNodes >= 1);

  const env = { ...controller.clientEnv };
  const table = await runCli(['nodes'], env);
  t.equal(table.code, 0, table.stderr);
  const lines = table.stdout.trim().split('\n');
  t.match(lines[0], /^NAME\s+STATE\s+ADDRESS\s+CPUS\s+NUMA\s+LAST SEEN\s+DRAIN$/);
  t.match(lines[1], /^node-a\s+ready\s+127\.0\.0\.1\s+\d+\s+\d+\s+\d+s ago\s+-$/);

  const json = await runCli(['nodes', '--json'], env);
  t.equal(json.code, 0);
  const parsed = (JSON.parse(json.stdout) as { nodes: Array<{ name: string; state: string }> }).nodes;
  t.same(
    parsed.map((n) => [n.name, n.state]),
    [['node-a', 'ready']],
  );

  const one = await controller.api<{ name: string }>('/v1/nodes/node-a');
  t.equal(one.status, 200);
  t.equal(one.body.name, 'node-a');
  const missing = await controller.api<{ code: string; message: string }>('/v1/nodes/nope');
  t.equal(missing.status, 404);
  t.equal(missing.body.code, 'RANKD_NODE_NOT_FOUND');
  t.match(missing.body.message, /nope/);

  const facts = await controller.api<{ cpu: { pus: number } }>('/v1/nodes/node-a/facts');
  t.equal(facts.status, 200);
  t.equal(facts.body.cpu.pus, node.cpus);
});

t.test('a node that stops heartbeating becomes unreachable, then lost', async (t) => {
  const controller = await startController({ heartbeatMs: 200 });
  t.teardown(() => controller.stop());
  const agent = startAgent(controller, { name: 'node-b' });
  t.teardown(() => agent.stop());
  await waitForNode(controller, 'node-b', 'ready');
  // SIGSTOP freezes the agent: its TCP link stays open but it sends nothing.
  process.kill(agent.pid, 'SIGSTOP');
  t.teardown(() => {
    try {
      process.kill(agent.pid, 'SIGCONT');
    } catch {
      // already gone
    }
  });
  const unreachable = await waitForNode(controller, 'node-b', 'unreachable', 10_000);
  // Two detectors race for a frozen agent, both at about the heartbeat TTL: the registry's
  // sweep (no heartbeat) and the gateway's ping, which ends a link that missed its pong
  // (connection closed: 1006). On a loaded machine either may come first; each is right.
  t.match((unreachable as unknown as { stateReason: string }).stateReason, /no heartbeat|connection closed/);
  await waitForNode(controller, 'node-b', 'lost', 10_000);
  process.kill(agent.pid, 'SIGCONT');
  await waitForNode(controller, 'node-b', 'ready', 10_000);
});
