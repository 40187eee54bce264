// An organisation's own serving certificate (`rankd controller --tls-cert --tls-key
// --tls-ca`): the chain is leaf + intermediate, the pin is the organisation's root, alone.
// Agents enroll and connect through it; a --tls-ca of several certificates, or an
// intermediate, is refused at start, since every agent would refuse to pin it.
import { writeFileSync } from 'node:fs';
import { join } from 'node:path';
import t from 'tap';
import { runCli, startAgent, startController, waitForNode } from '../helpers/daemons.js';
import { issueServer, makeCa, makeIntermediate } from '../helpers/test-pki.js';
import { scratchDir } from '../helpers/scratch.js';

const dir = scratchDir('rankd-org-pki-');
const file = (name: string, content: string) => {
  const path = join(dir, name);
  writeFileSync(path, content, { mode: 0o600 });
  return path;
};

const root = await makeCa('CN=org root CA, O=org');
const intermediate = await makeIntermediate(root, 'CN=org issuing CA, O=org');
const leaf = await issueServer(intermediate, { ips: ['127.0.0.1'] });
const tlsFlags = (ca: string) => [
  '--tls-cert',
  file('server.crt', leaf.certPem + intermediate.certPem),
  '--tls-key',
  file('server.key', leaf.keyPem),
  '--tls-ca',
  ca,
];

t.test('the root of the chain, pinned alone: agents enroll, connect, and the CLI trusts ca-bundle.crt', async (t) => {
  const controller = await startController({ extra: tlsFlags(file('root.crt', root.certPem)) });
  t.teardown(() => controller.stop());
  t.equal(controller.ca.trim(), root.certPem.trim(), 'ca-bundle.crt is the root and only the root');
  const agent = startAgent(controller, { name: 'org-node' });
  t.teardown(() => agent.stop());
  await waitForNode(controller, 'org-node', 'ready', 30_000);
  const nodes = await runCli(['nodes'], controller.clientEnv);
  t.equal(nodes.code, 0, nodes.stderr);
  t.match(nodes.stdout, /org-node/);
});

for (const [what, ca, why] of [
  ['a bundle of root and intermediate', root.certPem + intermediate.certPem, /holds 2 certificates/],
  ['the intermediate', intermediate.certPem, /is not self-signed/],
  ['the server certificate', leaf.certPem, /is not a CA certificate/],
] as const) {
  t.test(`--tls-ca ${what} is refused at start with RANKD_CA_BUNDLE_INVALID`, async (t) => {
    const dataDir = scratchDir('rankd-ctl-');
    const r = await runCli([
      'controller',
      '--listen',
      '127.0.0.1:0',
      '--data-dir',
      dataDir,
      ...tlsFlags(file('ca.crt', ca)),
    ]);
    t.equal(r.code, 64, r.stderr);
    t.match(r.stderr, /RANKD_CA_BUNDLE_INVALID/);
    t.match(r.stderr, why);
    t.notMatch(r.stderr, /internal error/);
  });
}
