// Node identity comes from the certificate: a controller with another CA is refused by the
// agent, a node cannot speak as another, a removed node is cut off at once and stays out,
// and certificates are renewed before they expire.
import { readFileSync } from 'node:fs';
import { X509Certificate } from 'node:crypto';
import { join } from 'node:path';
import t from 'tap';
import WebSocket from 'ws';
import { agentStateDir, runCli, startAgent, startController, waitForNode, waitUntil } from '../helpers/daemons.js';
import { enrollIdentity, gatewayUrl } from '../helpers/tls.js';

t.test('a man in the middle with another CA: the agent refuses it (wrong CA hash) and exits', async (t) => {
  const real = await startController();
  t.teardown(() => real.stop());
  const mitm = await startController();
  t.teardown(() => mitm.stop());
  t.not(mitm.caHash, real.caHash);
  // the agent is told the real controller's pin but dials the impostor, which even hands out valid join tokens
  const agent = startAgent(
    { url: mitm.url, joinToken: mitm.joinToken, caHash: real.caHash, dataDir: mitm.dataDir },
    { name: 'victim' },
  );
  t.teardown(() => agent.stop());
  const exit = await Promise.race([agent.exited, new Promise<null>((r) => setTimeout(() => r(null), 30_000))]);
  t.ok(exit, 'the agent exits');
  t.equal(exit?.code, 77);
  t.match(agent.output(), /RANKD_CA_HASH_MISMATCH/);
  t.match(agent.output(), /refusing it/);
  const nodes = await mitm.api<{ nodes: unknown[] }>('/v1/nodes');
  t.same(nodes.body.nodes, [], 'nothing reached the impostor');
  const tokens = await mitm.api<{ tokens: Array<{ uses: number }> }>('/v1/join-tokens');
  t.equal(tokens.body.tokens[0]?.uses, 0, 'not even a CSR');
});

t.test('a node certificate cannot speak for another node: not in the hello, not for its ranks', async (t) => {
  const controller = await startController();
  t.teardown(() => controller.stop());
  const victim = startAgent(controller, { name: 'victim' });
  t.teardown(() => victim.stop());
  await waitForNode(controller, 'victim', 'ready');
  const job = await controller.api<{ id: string }>('/v1/jobs', {
    method: 'POST',
    body: { command: ['sleep', '60'], placement: { ntasks: 1, nodelist: ['victim'] } },
  });
  t.ok(job.status >= 200 && job.status < 300, JSON.stringify(job.body));
  await waitUntil(
    'rank running',
    20_000,
    async () =>
      (await controller.api<{ ranks: Array<{ state: string }> }>(`/v1/jobs/${job.body.id}`)).body.ranks[0]?.state ===
      'running',
  );

  const mallory = await enrollIdentity(controller, 'mallory');
  const dial = () =>
    new WebSocket(gatewayUrl(controller.url), ['rankd.v1'], { ca: mallory.ca, cert: mallory.cert, key: mallory.key });
  const hello = (name: string) =>
    JSON.stringify({ type: 'hello', name, version: 'test', capabilities: [], labels: {} });

  // 1. a hello naming the victim
  const posing = dial();
  const closed = await new Promise<{ code: number; reason: string }>((resolve) => {
    posing.on('open', () => posing.send(hello('victim')));
    posing.on('close', (code, reason) => resolve({ code, reason: reason.toString() }));
    posing.on('error', () => undefined);
  });
  t.equal(closed.code, 4403);
  t.match(closed.reason, /RANKD_NODE_IDENTITY_MISMATCH/);
  t.equal((await waitForNode(controller, 'victim', 'ready')).connected, true, 'the victim keeps its link');

  // 2. as itself, reporting the victim's rank as exited
  const ws = dial();
  const frames: Array<{ type: string; code?: string }> = [];
  ws.on('message', (d: Buffer) => frames.push(JSON.parse(d.toString()) as { type: string; code?: string }));
  ws.on('error', () => undefined);
  await new Promise<void>((r) => ws.on('open', () => r()));
  ws.send(hello('mallory'));
  await waitUntil('welcome', 5000, () => frames.some((f) => f.type === 'welcome'));
  ws.send(
    JSON.stringify({
      type: 'rank.exit',
      jobId: job.body.id,
      rank: 0,
      code: 0,
      signal: null,
      endedAt: new Date().toISOString(),
      outputBytes: { stdout: 0, stderr: 0 },
    }),
  );
  const refusal = await waitUntil('refusal', 5000, () => frames.find((f) => f.type === 'error'));
  t.equal(refusal.code, 'RANKD_FOREIGN_RANK');
  const after = await controller.api<{ state: string; ranks: Array<{ state: string }> }>(`/v1/jobs/${job.body.id}`);
  t.equal(after.body.ranks[0]?.state, 'running', "the victim's rank is untouched");
  ws.terminate();
  await controller.api(`/v1/jobs/${job.body.id}/cancel`, { method: 'POST', body: {} });
});

t.test('rankd node remove: the live link drops at once and the revoked certificate is refused for good', async (t) => {
  const controller = await startController();
  t.teardown(() => controller.stop());
  const agent = startAgent(controller, { name: 'gone' });
  t.teardown(() => agent.stop());
  await waitForNode(controller, 'gone', 'ready');
  const started = Date.now();
  const removed = await runCli(['node', 'remove', 'gone'], controller.clientEnv);
  t.equal(removed.code, 0, removed.stderr);
  t.match(removed.stderr, /1 link dropped/);
  const exit = await Promise.race([agent.exited, new Promise<null>((r) => setTimeout(() => r(null), 15_000))]);
  t.ok(exit, `the agent was cut off and stopped (${Date.now() - started} ms)`);
  t.equal(exit?.code, 77);
  t.match(agent.output(), /4401|RANKD_NODE_CERT_REVOKED/);
  const view = await controller.api<{ connected: boolean }>('/v1/nodes/gone');
  t.equal(view.body.connected, false);

  // the same agent, restarted with its revoked certificate (and a join token it may not use: the cert is still valid in time)
  const again = startAgent(controller, { name: 'gone' });
  t.teardown(() => again.stop());
  const exit2 = await Promise.race([again.exited, new Promise<null>((r) => setTimeout(() => r(null), 20_000))]);
  t.equal(exit2?.code, 77, 'reconnection with the revoked certificate is refused');
  t.match(again.output(), /RANKD_NODE_CERT_REVOKED/);
  t.equal((await controller.api<{ connected: boolean }>('/v1/nodes/gone')).body.connected, false);
});

t.test('node certificates are renewed at about 2/3 of their life, without losing the link', async (t) => {
  const controller = await startController({ extra: ['--node-cert-ttl', '6s'] });
  t.teardown(() => controller.stop());
  const agent = startAgent(controller, { name: 'renewer' });
  t.teardown(() => agent.stop());
  await waitForNode(controller, 'renewer', 'ready');
  const certFile = join(agentStateDir(controller, 'renewer'), 'node.crt');
  const serial = () => new X509Certificate(readFileSync(certFile)).serialNumber;
  const first = new X509Certificate(readFileSync(certFile));
  const before = serial();
  const renewedAt = await waitUntil(
    'a renewed certificate',
    15_000,
    () => (serial() !== before ? Date.now() : undefined),
    100,
  );
  const life = Date.parse(first.validTo) - Date.parse(first.validFrom);
  const at = (renewedAt - Date.parse(first.validFrom)) / life;
  t.ok(at > 0.5 && at < 0.9, `renewed at ${(at * 100).toFixed(0)} % of the certificate's life`);
  t.ok(Date.parse(first.validTo) > renewedAt, 'before it expired');
  const next = new X509Certificate(readFileSync(certFile));
  t.match(next.subject, /CN=renewer/);
  t.ok(next.checkIssued(new X509Certificate(controller.ca)), 'issued by the controller CA');
  t.equal((await waitForNode(controller, 'renewer', 'ready')).connected, true, 'still connected');
  // past the first certificate's expiry, the agent reconnects with the new one
  await new Promise((r) => setTimeout(r, Math.max(0, Date.parse(first.validTo) - Date.now() + 500)));
  await controller.api('/v1/nodes');
  t.match(agent.output(), /node certificate renewed/);
});
