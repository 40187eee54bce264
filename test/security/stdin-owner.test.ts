// A job's stdin is its owner's: against a real controller and agent, other users (a user,
// an operator, a reader, a bad token) are refused the stdin WebSocket of alice's job as plain
// HTTP with no socket, a second writer is refused even to alice, and what the rank reads is
// exactly what its owner wrote. An admin may write to anyone's job. The audit log holds
// every attempt.
import t, { type Test } from 'tap';
import { execFileSync } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import WebSocket from 'ws';
import { runCli, waitUntil, type ControllerHandle } from '../helpers/daemons.js';
import { localCluster } from '../helpers/cluster.js';

const isRoot = process.getuid?.() === 0;
const suffix = randomBytes(3).toString('hex');

interface Created {
  name: string;
  token: string;
  accessor: string;
}
interface JobLike {
  id: string;
  state: string;
}
interface AuditLike {
  user: string | null;
  route: string;
  resource: Record<string, string>;
  decision: string;
  reason: string;
  status: number | null;
}

type Opened = { ws: WebSocket } | { status: number; body: { code?: string; message?: string } };

/** Opens the stdin WebSocket of a job: the socket, or the plain HTTP refusal. */
function openStdin(controller: ControllerHandle, token: string, jobId: string): Promise<Opened> {
  return new Promise((resolve, reject) => {
    const ws = new WebSocket(`${controller.url.replace(/^https/, 'wss')}/v1/stdin?job=${jobId}`, ['rankd.stdin.v1'], {
      ca: controller.ca,
      headers: { authorization: `Bearer ${token}` },
      handshakeTimeout: 10_000,
    });
    ws.once('open', () => resolve({ ws }));
    ws.once('unexpected-response', (_req, res) => {
      let body = '';
      res.on('data', (d: Buffer) => (body += d.toString()));
      res.on('end', () =>
        resolve({ status: res.statusCode ?? 0, body: JSON.parse(body) as { code?: string; message?: string } }),
      );
    });
    ws.once('error', (err) => reject(err));
  });
}

function refused(t: Test, opened: Opened, status: number, code: string, why: RegExp, what: string): void {
  t.notOk('ws' in opened, `${what}: no socket opens`);
  if ('ws' in opened) return opened.ws.terminate();
  t.equal(opened.status, status, `${what}: ${status}`);
  t.equal(opened.body.code, code, `${what}: ${code}`);
  t.match(opened.body.message ?? '', why, `${what}: the message says why`);
}

/** Writes, closes (the stdin's end), and waits for the close. */
function writeAndClose(ws: WebSocket, data: string): Promise<void> {
  return new Promise((resolve) => {
    ws.once('close', () => resolve());
    ws.send(Buffer.from(data), { binary: true });
    ws.close(1000, 'eof');
  });
}

t.test(
  "only a job's owner, or an admin, writes to its stdin",
  { skip: isRoot ? false : 'needs root: the role user runs its ranks as a Unix user of its own, made with useradd' },
  async (t) => {
    const { controller, env } = await localCluster(t, ['solo']);
    const unix = { alice: `rksa${suffix}`, bob: `rksb${suffix}` };
    for (const name of Object.values(unix)) {
      execFileSync('useradd', ['--no-create-home', '--shell', '/usr/sbin/nologin', name]);
      t.teardown(() => {
        try {
          execFileSync('userdel', [name]);
        } catch {
          // already gone
        }
      });
    }
    const add = async (name: string, role: string, unixUser?: string): Promise<Created> => {
      const r = await runCli(
        ['user', 'add', name, '--role', role, ...(unixUser ? ['--unix-user', unixUser] : []), '--json'],
        env,
      );
      t.equal(r.code, 0, `user add ${name}: ${r.stderr}`);
      return JSON.parse(r.stdout) as Created;
    };
    const alice = await add('alice', 'user', unix.alice);
    const bob = await add('bob', 'user', unix.bob);
    const otto = await add('otto', 'operator');
    const rita = await add('rita', 'reader');

    const submit = async (body: Record<string, unknown>): Promise<string> => {
      const r = await controller.api<JobLike>('/v1/jobs', {
        method: 'POST',
        token: alice.token,
        body: { command: ['wc', '-c'], cwd: '/tmp', placement: { ntasks: 1 }, ...body },
      });
      t.equal(r.status, 201, JSON.stringify(r.body));
      return r.body.id;
    };
    const output = async (id: string): Promise<string> => {
      const end = await waitUntil(`job ${id} to end`, 30_000, async () => {
        const v = await controller.api<JobLike>(`/v1/jobs/${id}`, { token: alice.token });
        return ['succeeded', 'failed', 'cancelled', 'lost', 'timed-out'].includes(v.body.state) ? v.body : undefined;
      });
      t.equal(end.state, 'succeeded', `job ${id} succeeded`);
      return String((await controller.api<string>(`/v1/jobs/${id}/logs`, { token: alice.token })).body).trim();
    };

    const id = await submit({ stdin: 0 });
    const mine = await openStdin(controller, alice.token, id);
    t.ok('ws' in mine, 'alice opens the stdin of her own job');
    refused(
      t,
      await openStdin(controller, bob.token, id),
      403,
      'RANKD_FORBIDDEN',
      new RegExp(`user "bob" \\(role user\\) may not write to the stdin of job ${id}: it belongs to "alice"`),
      'bob',
    );
    refused(
      t,
      await openStdin(controller, otto.token, id),
      403,
      'RANKD_FORBIDDEN',
      /user "otto" \(role operator\) may not write to the stdin of job .*only its owner or an admin may/,
      'an operator',
    );
    refused(
      t,
      await openStdin(controller, rita.token, id),
      403,
      'RANKD_FORBIDDEN',
      /role reader\) may not write to the stdin of job: that needs the role admin or operator or user/,
      'a reader',
    );
    refused(
      t,
      await openStdin(controller, 'rankd_' + 'x'.repeat(43), id),
      401,
      'RANKD_UNAUTHORIZED',
      /API token/,
      'a bad token',
    );
    refused(
      t,
      await openStdin(controller, alice.token, id),
      409,
      'RANKD_STDIN_UNAVAILABLE',
      /already has its writer/,
      'a second writer, even alice',
    );
    if (!('ws' in mine)) return;
    await writeAndClose(mine.ws, 'abc');
    t.equal(await output(id), '3', 'the rank read exactly the 3 bytes its owner wrote, and EOF');

    const other = await submit({ stdin: 0 });
    const admin = await openStdin(controller, controller.apiToken, other);
    t.ok('ws' in admin, "an admin opens the stdin of alice's job");
    if ('ws' in admin) await writeAndClose(admin.ws, 'xy');
    t.equal(await output(other), '2', 'and the rank reads what the admin wrote');

    const none = await submit({});
    refused(
      t,
      await openStdin(controller, alice.token, none),
      409,
      'RANKD_STDIN_UNAVAILABLE',
      /reads no stdin/,
      'a job submitted without stdin',
    );
    t.equal(await output(none), '0', 'and its rank read /dev/null');

    // a revoked token ends the stdin it opened: the client is told, the rank reads EOF after what came
    const revokedJob = await submit({ stdin: 0 });
    const second = await runCli(['token', 'create', '--user', 'alice', '--json'], env);
    t.equal(second.code, 0, second.stderr);
    const aliceToo = JSON.parse(second.stdout) as Created;
    const opened = await openStdin(controller, aliceToo.token, revokedJob);
    t.ok('ws' in opened, 'alice opens the stdin with her second token');
    if ('ws' in opened) {
      const ws = opened.ws;
      const events: string[] = [];
      ws.on('message', (d: Buffer, binary: boolean) => !binary && events.push(d.toString()));
      const closed = new Promise<number>((resolve) => ws.once('close', (code) => resolve(code)));
      await new Promise<void>((resolve) => ws.send(Buffer.from('abcd'), { binary: true }, () => resolve()));
      await waitUntil('the 4 bytes to be acknowledged', 10_000, () => events.some((e) => /"ack"/.test(e)));
      const revoked = await controller.api(`/v1/tokens/${aliceToo.accessor}`, {
        method: 'DELETE',
        token: controller.apiToken,
      });
      t.equal(revoked.status, 204, 'the token is revoked');
      const at = Date.now();
      t.equal(await closed, 4401, 'the stdin socket closes with 4401');
      // the revocation itself ends it: a bound far below the job's own end, loose for a loaded CI machine
      t.ok(Date.now() - at < 5000, 'promptly after the answer, while the rank still waits on its stdin');
      t.ok(
        events.some((e) => /RANKD_CREDENTIAL_REVOKED/.test(e)),
        'after an error event RANKD_CREDENTIAL_REVOKED',
      );
    }
    t.equal(await output(revokedJob), '4', 'the rank read what came before the revocation, then EOF');

    // nobody opens the stdin: the rank reads EOF 10 s after its start, and does not wait forever
    const orphan = await submit({ stdin: 0 });
    t.equal(await output(orphan), '0', 'a stdin no client opened ends on its own');

    const audit = await controller.api<{ entries: AuditLike[] }>('/v1/audit?limit=1000', {
      token: controller.apiToken,
    });
    const stdinEntries = audit.body.entries.filter((e) => e.route === '/v1/stdin' && e.resource['job'] === id);
    for (const who of ['bob', 'otto', 'rita']) {
      t.ok(
        stdinEntries.some((e) => e.user === who && e.decision === 'deny' && e.status === 403),
        `audit: ${who}'s refusal`,
      );
    }
    t.ok(
      stdinEntries.some(
        (e) =>
          e.user === 'alice' &&
          e.decision === 'allow' &&
          e.status === 101 &&
          /^stdin: the client closed its stdin; 3 bytes/.test(e.reason),
      ),
      `audit: alice's stdin with its byte count (${JSON.stringify(stdinEntries.map((e) => [e.user, e.decision, e.status, e.reason]))})`,
    );
  },
);
