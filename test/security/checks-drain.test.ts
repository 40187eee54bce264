// What `rankd check net --drain` may drain, against a real controller and real agents on
// this machine: a node the check could not reach is drained with the finding as its reason,
// and a --rail that names a NIC none of the selected nodes has is refused before anything is
// measured, stored or drained (before, every node was "flagged" for lacking it, and --drain
// emptied the whole selection over a typo). A connected agent too old to probe is flagged
// for that, not called unreachable.
import t from 'tap';
import WebSocket from 'ws';
import { runCli, waitUntil } from '../helpers/daemons.js';
import { localCluster } from '../helpers/cluster.js';
import { enrollIdentity, gatewayUrl } from '../helpers/tls.js';

interface NodeLike {
  name: string;
  drain: { reason: string } | null;
}
interface NetCheckLike {
  id: string;
  flagged: string[];
  drained: string[];
  nodes: Array<{ node: string; verdict: string; reason: string | null }>;
}

t.test('a --rail no selected node has is refused: nothing measured, stored or drained', async (t) => {
  const { controller, env } = await localCluster(t, ['rl1', 'rl2']);
  const r = await runCli(['check', 'net', 'rl1,rl2', '--rail', 'eht9', '--drain', '--duration', '1'], env);
  t.equal(r.code, 65, `refused (65); stdout: ${r.stdout}`);
  t.match(r.stderr, /--rail eht9: none of the selected nodes has a NIC eht9 \(rl1 has no network interface eht9/);
  t.match(r.stderr, /RANKD_CHECK_UNKNOWN_RAIL/);
  const nodes = await controller.api<{ nodes: NodeLike[] }>('/v1/nodes');
  t.same(
    nodes.body.nodes.filter((n) => n.drain).map((n) => n.name),
    [],
    'no node is drained',
  );
  t.same((await controller.api('/v1/checks')).body, { checks: [] }, 'no check is stored');
  // the nodes are free again: a check on the rail they have runs
  const ok = await runCli(['check', 'net', 'rl1,rl2', '--duration', '1', '--threshold', '0.05', '--json'], env);
  t.equal(ok.code, 0, ok.stderr);
});

t.test('--drain drains a node the check could not reach, with the finding as the reason', async (t) => {
  const { controller, agents, env } = await localCluster(t, ['dr1', 'dr2', 'dr3'], { heartbeatMs: 500 });
  await agents[2]!.stop();
  await waitUntil('dr3 to be seen disconnected', 30_000, async () => {
    const r = await controller.api<{ nodes: Array<NodeLike & { connected: boolean }> }>('/v1/nodes');
    return r.body.nodes.some((n) => n.name === 'dr3' && !n.connected);
  });
  // two loopback ends measure close to each other; 5 % keeps CPU noise from flagging them
  const r = await runCli(['check', 'net', 'dr*', '--duration', '1', '--threshold', '0.05', '--drain', '--json'], env);
  t.equal(r.code, 1, `exit 1: a node is flagged; ${r.stderr}`);
  const result = JSON.parse(r.stdout) as NetCheckLike;
  t.same(result.flagged, ['dr3']);
  t.same(result.drained, ['dr3']);
  t.equal(result.nodes.find((n) => n.node === 'dr3')?.verdict, 'unreachable');
  const nodes = await controller.api<{ nodes: NodeLike[] }>('/v1/nodes');
  const drained = nodes.body.nodes.filter((n) => n.drain);
  t.same(
    drained.map((n) => n.name),
    ['dr3'],
    'only the unreachable node is drained',
  );
  t.match(drained[0]?.drain?.reason, new RegExp(`^rankd check net ${result.id}: `), 'the reason names the check');
});

t.test('a connected agent without the fabric capability is flagged as such, not called unreachable', async (t) => {
  const { controller, env } = await localCluster(t, ['cap1']);
  // an older agent: a real node certificate and the gateway protocol, but no "fabric" capability
  const id = await enrollIdentity(controller, 'old1');
  const ws = new WebSocket(gatewayUrl(controller.url), ['rankd.v1'], { ca: id.ca, cert: id.cert, key: id.key });
  const frames: Array<{ type: string }> = [];
  ws.on('message', (d: Buffer) => frames.push(JSON.parse(d.toString()) as { type: string }));
  ws.on('error', () => undefined);
  await new Promise<void>((r) => ws.on('open', () => r()));
  ws.send(JSON.stringify({ type: 'hello', name: 'old1', version: '0.0.1-old', capabilities: ['exec'], labels: {} }));
  let seq = 0;
  const beat = setInterval(() => ws.send(JSON.stringify({ type: 'heartbeat', seq: seq++ })), 500);
  t.teardown(() => {
    clearInterval(beat);
    ws.terminate();
  });
  await waitUntil('welcome', 5000, () => frames.some((f) => f.type === 'welcome'));

  const r = await runCli(['check', 'net', 'cap1,old1', '--duration', '1', '--json'], env);
  t.equal(r.code, 1, `exit 1: a node is flagged; ${r.stderr}`);
  const result = JSON.parse(r.stdout) as NetCheckLike;
  t.same(
    result.nodes.find((n) => n.node === 'old1'),
    {
      node: 'old1',
      verdict: 'flagged',
      reason: 'agent 0.0.1-old has no "fabric" capability; upgrade it',
      bandwidth: null,
      latencyUs: null,
    },
  );
  t.notOk(
    frames.some((f) => f.type.startsWith('fabric.')),
    'no probe was asked of it',
  );
});
