// Renewal revokes the certificate it renews: a copy of the old key opens no link and renews
// nothing, while the agent that renewed keeps its live link, its ranks, and connects with
// the new certificate from then on (here: after a controller restart drops every link).
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import t from 'tap';
import { keyAndCsr } from '#agent/link/csr';
import { agentStateDir, startAgent, startController, waitForNode, waitUntil } from '../helpers/daemons.js';
import { enrollIdentity, httpsFetch, upgradeWith } from '../helpers/tls.js';

async function renewWith(url: string, id: { ca: string; cert: string; key: string }, name: string) {
  const res = await httpsFetch(`${url}/v1/enroll/renew`, {
    method: 'POST',
    headers: { 'content-type': 'application/json' },
    body: JSON.stringify({ csr: (await keyAndCsr(name)).csr }),
    ca: id.ca,
    cert: id.cert,
    key: id.key,
  });
  return {
    status: res.status,
    body: JSON.parse(await res.text()) as { code?: string; certificate?: string; serial?: string },
  };
}

t.test('a renewed certificate is revoked: refused at the upgrade, and it renews no second time', async (t) => {
  const controller = await startController();
  t.teardown(() => controller.stop());
  const old = await enrollIdentity(controller, 'renewer');
  t.equal((await upgradeWith(controller.url, old)).status, 101, 'before renewal it connects');
  const { key, csr } = await keyAndCsr('renewer');
  const res = await httpsFetch(`${controller.url}/v1/enroll/renew`, {
    method: 'POST',
    headers: { 'content-type': 'application/json' },
    body: JSON.stringify({ csr }),
    ca: old.ca,
    cert: old.cert,
    key: old.key,
  });
  t.equal(res.status, 200);
  const renewed = JSON.parse(await res.text()) as { certificate: string; serial: string };
  t.same(
    await upgradeWith(controller.url, old),
    { status: 401, code: 'RANKD_NODE_CERT_REVOKED' },
    'the old certificate is refused at the handshake',
  );
  t.equal(
    (await upgradeWith(controller.url, { ca: old.ca, cert: renewed.certificate, key })).status,
    101,
    'the new one connects',
  );
  const again = await renewWith(controller.url, old, 'renewer');
  t.same([again.status, again.body.code], [401, 'RANKD_NODE_CERT_REVOKED'], 'a thief with the old key cannot renew it');
  const audit = await controller.api<{
    entries: Array<{ method: string; route: string; decision: string; status: number; reason: string }>;
  }>('/v1/audit?limit=100');
  t.match(
    audit.body.entries.filter((e) => e.route === '/v1/enroll/renew' && e.decision === 'deny'),
    [{ method: 'POST', status: 401, reason: /was revoked/ }],
    'the refused renewal is in the audit log',
  );
  const removed = await controller.api<{ revokedSerials: string[] }>('/v1/nodes/renewer', { method: 'DELETE' });
  t.same(removed.body.revokedSerials, [renewed.serial], 'only the new certificate was still live');
});

t.test(
  'a real agent renews: the old certificate is refused, the agent keeps its rank and reconnects with the new one',
  async (t) => {
    const controller = await startController({ extra: ['--node-cert-ttl', '20s'] });
    let current = controller;
    t.teardown(() => current.stop());
    const agent = startAgent(controller, { name: 'renewing' });
    t.teardown(() => agent.stop());
    await waitForNode(controller, 'renewing', 'ready', 30_000);
    const stateDir = agentStateDir(controller, 'renewing');
    const read = () => ({
      ca: readFileSync(join(stateDir, 'ca.crt'), 'utf8'),
      cert: readFileSync(join(stateDir, 'node.crt'), 'utf8'),
      key: readFileSync(join(stateDir, 'node.key'), 'utf8'),
    });
    const old = read();
    const job = await controller.api<{ id: string }>('/v1/jobs', {
      method: 'POST',
      body: { command: ['sleep', '60'], placement: { ntasks: 1, nodelist: ['renewing'] } },
    });
    t.equal(job.status, 201, JSON.stringify(job.body));
    const rankState = async () =>
      (await current.api<{ ranks: Array<{ state: string; pid: number | null }> }>(`/v1/jobs/${job.body.id}`)).body
        .ranks[0];
    const running = await waitUntil('rank running', 20_000, async () =>
      (await rankState())?.state === 'running' ? rankState() : undefined,
    );

    // renewal at 64-70 % of 20 s
    await waitUntil('the agent to renew', 25_000, () => read().cert !== old.cert);
    t.same(
      await upgradeWith(controller.url, old),
      { status: 401, code: 'RANKD_NODE_CERT_REVOKED' },
      'the certificate it renewed is refused',
    );
    t.equal(agent.child.exitCode, null, 'the agent is still running');
    t.match(
      await waitForNode(controller, 'renewing', 'ready'),
      { connected: true },
      'on the link it opened with the old certificate',
    );

    // every link drops: the agent dials again, with the new certificate
    const port = Number(new URL(controller.url).port);
    await controller.stop();
    current = await startController({ dataDir: controller.dataDir, port, extra: ['--node-cert-ttl', '20s'] });
    await waitForNode(current, 'renewing', 'ready', 30_000);
    t.equal(agent.child.exitCode, null, 'the agent did not take the revocation for its own');
    t.notMatch(agent.output(), /RANKD_NODE_CERT_REVOKED/, 'and never presented the revoked certificate');
    t.match(await rankState(), { state: 'running', pid: running.pid }, 'its rank ran on, the same process');
    await current.api(`/v1/jobs/${job.body.id}/cancel`, { method: 'POST', body: {} });
  },
);
