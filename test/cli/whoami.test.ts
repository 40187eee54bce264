// `rankd whoami` against a real controller: who the token belongs to, its role, Unix user,
// accessor and kind, and the controller URL, for an admin and a plain user; --json prints
// exactly what GET /v1/whoami answers; a revoked token gets no answer (exit 77).
import t from 'tap';
import { runCli, startController } from '../helpers/daemons.js';

interface WhoAmI {
  name: string;
  role: string;
  unixUser: string | null;
  accessor: string;
  credential: { kind: string; createdAt: string; expiresAt: string | null; description: string };
}

t.test('rankd whoami: an admin, a plain user, --json as REST answers, a revoked token', async (t) => {
  const controller = await startController();
  t.teardown(() => controller.stop());
  const env = { ...controller.clientEnv, RANKD_HOME: controller.dataDir };

  const admin = await runCli(['whoami'], env);
  t.equal(admin.code, 0, admin.stderr);
  const adminRest = await controller.api<WhoAmI>('/v1/whoami');
  t.equal(adminRest.status, 200);
  t.equal(
    admin.stdout,
    [
      'user:       admin',
      'role:       admin',
      'unix user:  -',
      `token:      ${adminRest.body.accessor} (API token, created ${adminRest.body.credential.createdAt.replace('T', ' ').slice(0, 19)} UTC, no expiry (until revoked), "${adminRest.body.credential.description}")`,
      `controller: ${controller.url}`,
      '',
    ].join('\n'),
  );
  t.equal(admin.stderr, '');

  const added = await runCli(['user', 'add', 'alice', '--role', 'user', '--unix-user', 'nobody', '--json'], env);
  t.equal(added.code, 0, added.stderr);
  const alice = JSON.parse(added.stdout) as { token: string; accessor: string };
  const second = await controller.api<{ token: string; accessor: string }>('/v1/tokens', {
    method: 'POST',
    token: alice.token,
    body: { description: 'laptop' },
  });
  t.equal(second.status, 201);
  const asAlice = { ...env, RANKD_TOKEN: second.body.token };

  const json = await runCli(['whoami', '--json'], asAlice);
  t.equal(json.code, 0, json.stderr);
  const rest = await controller.api<WhoAmI>('/v1/whoami', { token: second.body.token });
  t.same(JSON.parse(json.stdout), rest.body, '--json: the document GET /v1/whoami answers');
  t.match(
    rest.body,
    {
      name: 'alice',
      role: 'user',
      unixUser: 'nobody',
      accessor: second.body.accessor,
      credential: { kind: 'api-token', expiresAt: null, description: 'laptop' },
    },
    'the token used, not her first one',
  );
  t.ok(Math.abs(Date.parse(rest.body.credential.createdAt) - Date.now()) < 600_000, 'created just now');

  const text = await runCli(['whoami'], asAlice);
  t.match(
    text.stdout,
    /^user: {7}alice\nrole: {7}user\nunix user: {2}nobody\ntoken: {6}[0-9a-f]{16} \(API token, created .* UTC, no expiry \(until revoked\), "laptop"\)\n/,
  );
  t.match(text.stdout, `controller: ${controller.url}\n`);

  const revoked = await runCli(['token', 'revoke', second.body.accessor], env);
  t.equal(revoked.code, 0, revoked.stderr);
  const after = await runCli(['whoami'], asAlice);
  t.equal(after.code, 77, 'a revoked token: exit 77');
  t.equal(after.stdout, '', 'and nothing about anyone');
  t.match(after.stderr, /not authorized: missing, wrong or revoked API token/);
});
