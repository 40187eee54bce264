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
