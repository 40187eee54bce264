// The controller is killed and restarted: agents reconnect, nodes come back ready,
// nobody is judged during the grace period, and the registry persisted.
import t from 'tap';
import { startAgent, startController, waitForNode } from '../helpers/daemons.js';

const HEARTBEAT_MS = 200; // → TTL 600 ms, lost after 2.4 s

t.test('SIGKILL the controller, restart it: the agent reconnects and the registry persisted', async (t) => {
  const first = await startController({ heartbeatMs: HEARTBEAT_MS });
  const port = Number(new URL(first.url).port);
  const agent = startAgent(first, { name: 'survivor', labels: ['zone=a'] });
  t.teardown(() => agent.stop());
  const before = await waitForNode(first, 'survivor', 'ready');

  await first.stop('SIGKILL');
  const second = await startController({ dataDir: first.dataDir, port, heartbeatMs: HEARTBEAT_MS });
  t.teardown(() => second.stop());

  const after = await waitForNode(second, 'survivor', 'ready');
  t.equal(after.firstSeen, before.firstSeen, 'first-seen time survived the restart');
  t.same(after.labels, { zone: 'a' });
  t.ok(Date.parse(after.lastSeen) >= Date.parse(before.lastSeen));
});

t.test('a known node that has not reconnected is not judged during the grace period', async (t) => {
  const first = await startController({ heartbeatMs: HEARTBEAT_MS });
  const port = Number(new URL(first.url).port);
  const agent = startAgent(first, { name: 'sleeper' });
  t.teardown(() => agent.stop());
  await waitForNode(first, 'sleeper', 'ready');
  process.kill(agent.pid, 'SIGSTOP'); // it will not reconnect until SIGCONT
  t.teardown(() => {
    try {
      process.kill(agent.pid, 'SIGCONT');
    } catch {
      // gone
    }
  });
  await first.stop('SIGKILL');
  // The grace period is counted from the controller's own start, which is before it
  // answers: sampling for GRACE - 1.5 s after it answers stays inside the period.
  const GRACE_MS = 4000;
  const second = await startController({
    dataDir: first.dataDir,
    port,
    heartbeatMs: HEARTBEAT_MS,
    restartGraceMs: GRACE_MS,
  });
  t.teardown(() => second.stop());
  const upAt = Date.now();

  const states = new Set<string>();
  while (Date.now() - upAt < GRACE_MS - 1500) {
    const { body } = await second.api<{ nodes: Array<{ name: string; state: string; connected: boolean }> }>(
      '/v1/nodes',
    );
    const node = body.nodes.find((n) => n.name === 'sleeper');
    t.ok(node, 'the node is still known after the restart');
    states.add(`${node!.state}/${node!.connected}`);
    await new Promise((r) => setTimeout(r, 50));
  }
  t.same([...states], ['ready/false'], 'kept its last state, shown as not connected, during the grace period');

  // After the grace period and the TTL it is judged like any other node.
  await waitForNode(second, 'sleeper', 'unreachable', 10_000);
  process.kill(agent.pid, 'SIGCONT');
  await waitForNode(second, 'sleeper', 'ready', 10_000);
});

t.test('SIGTERM with an agent that never answers the close: the controller exits 0, no late write', async (t) => {
  // a stopped agent answers no close frame: its link's close event comes after the store is
  // closed, and once crashed the controller with "The database connection is not open"
  const controller = await startController({ heartbeatMs: HEARTBEAT_MS });
  const agent = startAgent(controller, { name: 'frozen' });
  t.teardown(async () => {
    agent.child.kill('SIGCONT');
    await agent.stop('SIGKILL');
  });
  await waitForNode(controller, 'frozen', 'ready');
  agent.child.kill('SIGSTOP');
  controller.child.kill('SIGTERM');
  const exit = await Promise.race([controller.exited, new Promise<null>((r) => setTimeout(() => r(null), 20_000))]);
  if (!exit) await controller.stop('SIGKILL');
  t.same(exit, { code: 0, signal: null }, `exit 0 (output: ${controller.output().slice(-1500)})`);
  t.notMatch(controller.output(), /database connection is not open|TypeError/, 'no write after the store closed');
});
