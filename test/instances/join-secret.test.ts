// The join secret of an instance (@rankd/protocol/join-secret): what every pod or Slurm
// step derives from it, what a real controller makes of it, and the refusals around it.
import t, { type Test } from 'tap';
import { spawn } from 'node:child_process';
import { createHash, createPrivateKey, createPublicKey, hkdfSync, X509Certificate } from 'node:crypto';
import { chmodSync, mkdirSync, mkdtempSync, readdirSync, readFileSync, rmSync, statSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { keyAndCsr } from '#agent/link/csr';
import { spkiHash } from '@rankd/protocol/ca-pin';
import { deriveJoinMaterial, joinSecretProblem, newJoinSecret, readJoinSecret } from '@rankd/protocol/join-secret';
import { CLI, runCli, spawnDaemon, startController, waitUntil, type ControllerHandle } from '../helpers/daemons.js';
import { httpsFetch } from '../helpers/tls.js';

function tempDir(t: Test, prefix: string): string {
  const dir = mkdtempSync(join(tmpdir(), prefix));
  t.teardown(() => rmSync(dir, { recursive: true, force: true }));
  return dir;
}

function secretFile(dir: string, secret: string, name = 'join-secret'): string {
  const path = join(dir, name);
  writeFileSync(path, secret + '\n', { mode: 0o600 });
  return path;
}

async function enrollWith(controller: ControllerHandle, token: string, name: string) {
  const { csr } = await keyAndCsr(name);
  return controller.api<{ code?: string; message?: string; node?: string }>('/v1/enroll', {
    method: 'POST',
    token: null,
    body: { token, csr },
  });
}

/** Every file under `dir` with its mode and the hash of its content: "nothing changed" is this, equal. */
function snapshot(dir: string): Record<string, string> {
  const out: Record<string, string> = {};
  const walk = (d: string) => {
    for (const name of readdirSync(d).sort()) {
      const path = join(d, name);
      const st = statSync(path);
      if (st.isDirectory()) {
        out[path] = `dir ${st.mode.toString(8)}`;
        walk(path);
      } else {
        const hash = createHash('sha256').update(readFileSync(path)).digest('hex');
        out[path] = `${st.mode.toString(8)} ${st.size} ${st.mtimeMs} ${hash}`;
      }
    }
  };
  walk(dir);
  return out;
}

const FIXED_VECTOR = {
  joinToken: 'x0j7an.xr76yezqqbspzdu8',
  caHash: 'sha256:ea6ee9a20f2058af9fcfed25a29d16584b073881f11a78fac05744444549e99c',
};

t.test('derivation: deterministic, and distinct secrets give distinct tokens and CAs', async (t) => {
  const a = newJoinSecret();
  const b = newJoinSecret();
  t.equal(a.length, 43, 'a new secret is 32 random bytes, base64url');
  t.equal(joinSecretProblem(a), null);
  t.same(deriveJoinMaterial(a), deriveJoinMaterial(a), 'the same secret derives the same material, every time');
  const ma = deriveJoinMaterial(a);
  const mb = deriveJoinMaterial(b);
  t.match(ma.joinToken, /^[a-z0-9]{6}\.[a-z0-9]{16}$/, "the token has the controller's id.secret form");
  t.equal(ma.joinToken.split('.')[0], ma.joinTokenId);
  t.not(ma.joinTokenId, mb.joinTokenId, 'distinct token ids');
  t.not(ma.joinToken.split('.')[1], mb.joinToken.split('.')[1], 'distinct token secrets');
  t.not(ma.caKeyPem, mb.caKeyPem, 'distinct CA keys');
  t.not(ma.caHash, mb.caHash, 'distinct CA pins');
  const spki = createPublicKey(ma.caKeyPem).export({ type: 'spki', format: 'der' });
  t.equal(ma.caHash, 'sha256:' + createHash('sha256').update(spki).digest('hex'), "caHash pins the derived key's SPKI");

  // pods of one set may run different builds of rankd (an image per pod): the derivation is
  // part of the protocol, so a fixed secret derives fixed material
  const fixed = deriveJoinMaterial('rankd-join-secret-test-vector-0123456789');
  t.equal(fixed.joinToken, FIXED_VECTOR.joinToken, 'the fixed vector: token');
  t.equal(fixed.caHash, FIXED_VECTOR.caHash, 'the fixed vector: CA pin');
});

t.test('derivation: the CA key and the token follow the documented construction', async (t) => {
  // recomputed here, not by the module: HKDF-SHA256 (salt
  // "rankd join secret v1", the purpose as info); the key d = c mod (n − 1) + 1 of 40 bytes (FIPS 186-5 A.2.1)
  const secret = newJoinSecret();
  const hkdf = (info: string, n: number) => Buffer.from(hkdfSync('sha256', secret, 'rankd join secret v1', info, n));
  const n = 0xffffffff00000000ffffffffffffffffbce6faada7179e84f3b9cac2fc632551n;
  const c = BigInt('0x' + hkdf('ca key', 40).toString('hex'));
  const d = ((c % (n - 1n)) + 1n).toString(16).padStart(64, '0');
  const jwk = createPrivateKey(deriveJoinMaterial(secret).caKeyPem).export({ format: 'jwk' });
  t.equal(Buffer.from(jwk.d!, 'base64url').toString('hex'), d, 'the CA private key');
  const chars = (info: string, count: number) =>
    [...hkdf(info, 4 * count)]
      .filter((b) => b < 252)
      .slice(0, count)
      .map((b) => 'abcdefghijklmnopqrstuvwxyz0123456789'[b % 36])
      .join('');
  t.equal(deriveJoinMaterial(secret).joinToken, `${chars('join token id', 6)}.${chars('join token secret', 16)}`);
});

t.test('the derived caHash is the pin of the CA a real controller serves at GET /v1/enroll/ca', async (t) => {
  const dir = tempDir(t, 'rankd-join-secret-');
  const secret = newJoinSecret();
  const controller = await startController({
    extra: ['--join-secret-file', secretFile(dir, secret), '--join-secret-uses', '2'],
  });
  t.teardown(() => controller.stop());
  const res = await httpsFetch(controller.url + '/v1/enroll/ca', { ca: controller.ca });
  t.equal(res.status, 200);
  const served = new X509Certificate(await res.text());
  const { caHash } = deriveJoinMaterial(secret);
  t.equal(spkiHash(served), caHash, "the served CA's SPKI hash is the one every agent derives");
  t.equal(res.headers.get('x-rankd-ca-hash'), caHash, 'and the hash the controller announces');
  t.equal(controller.caHash, caHash, 'and the one in controller.json');
  t.ok(served.ca, 'a CA certificate');
});

t.test('--join-secret-uses N allows exactly N enrollments; the next gets RANKD_JOIN_TOKEN_USED', async (t) => {
  const dir = tempDir(t, 'rankd-join-secret-');
  const secret = newJoinSecret();
  const uses = 3;
  const controller = await startController({
    extra: ['--join-secret-file', secretFile(dir, secret), '--join-secret-uses', String(uses)],
  });
  t.teardown(() => controller.stop());
  const { joinToken, joinTokenId } = deriveJoinMaterial(secret);
  for (let i = 1; i <= uses; i++) {
    const r = await enrollWith(controller, joinToken, `pod${i}`);
    t.equal(r.status, 200, `enrollment ${i} of ${uses}: ${JSON.stringify(r.body)}`);
    t.equal(r.body.node, `pod${i}`);
  }
  const refused = await enrollWith(controller, joinToken, 'pod-extra');
  t.equal(refused.status, 401);
  t.equal(refused.body.code, 'RANKD_JOIN_TOKEN_USED', String(refused.body.message));
  const tokens = await controller.api<{ tokens: Array<{ id: string; uses: number; maxUses: number; state: string }> }>(
    '/v1/join-tokens',
  );
  const derived = tokens.body.tokens.find((k) => k.id === joinTokenId);
  t.same(
    derived && { uses: derived.uses, maxUses: derived.maxUses, state: derived.state },
    { uses, maxUses: uses, state: 'used' },
    'the refused enrollment used nothing',
  );
  // the refused name was not taken: another token enrolls it
  const again = await enrollWith(controller, controller.joinToken, 'pod-extra');
  t.equal(again.status, 200, 'pod-extra was not enrolled by the refused request');
});

t.test('a restart on the same data dir takes the uses and ttl given now, and keeps the count', async (t) => {
  // a DaemonSet's controller whose node count outgrew --join-secret-uses: the manifest is raised, the pod restarts
  const dir = tempDir(t, 'rankd-join-secret-');
  const dataDir = join(dir, 'data');
  const secret = secretFile(dir, newJoinSecret());
  const { joinToken, joinTokenId } = deriveJoinMaterial(readFileSync(secret, 'utf8').trim());
  type TokenView = { id: string; uses: number; maxUses: number; state: string; createdAt: string; expiresAt: string };
  const derived = async (c: ControllerHandle) =>
    (await c.api<{ tokens: TokenView[] }>('/v1/join-tokens')).body.tokens.find((k) => k.id === joinTokenId)!;

  const first = await startController({ dataDir, extra: ['--join-secret-file', secret, '--join-secret-uses', '1'] });
  t.equal((await enrollWith(first, joinToken, 'node1')).status, 200, 'node1 enrolls: the one use');
  t.equal((await enrollWith(first, joinToken, 'node2')).body.code, 'RANKD_JOIN_TOKEN_USED', 'node2 finds it spent');
  await first.stop();

  const extra = ['--join-secret-file', secret, '--join-secret-uses', '3', '--join-secret-ttl', '2d'];
  const second = await startController({ dataDir, extra });
  t.teardown(() => second.stop());
  const token = await derived(second);
  t.same([token.uses, token.maxUses, token.state], [1, 3, 'valid'], 'the count kept, the uses raised to 3');
  t.equal(
    Date.parse(token.expiresAt) - Date.parse(token.createdAt),
    2 * 86_400_000,
    'the ttl is 2 days from the first start',
  );
  t.match(second.output(), /the join secret's token now allows these uses and this ttl/, 'and the controller said so');
  t.equal((await enrollWith(second, joinToken, 'node2')).status, 200, 'node2 enrolls now');
});

t.test('a data dir made with secret A is refused with secret B, and nothing in it changes', async (t) => {
  const dir = tempDir(t, 'rankd-join-secret-');
  const dataDir = join(dir, 'data');
  const a = secretFile(dir, newJoinSecret(), 'a');
  const b = secretFile(dir, newJoinSecret(), 'b');
  const first = await startController({ dataDir, extra: ['--join-secret-file', a] });
  await first.stop();
  const before = snapshot(dataDir);
  const r = await runCli(['controller', '--listen', '127.0.0.1:0', '--data-dir', dataDir, '--join-secret-file', b]);
  t.equal(r.code, 64, r.stderr);
  t.match(r.stderr, /RANKD_JOIN_SECRET_MISMATCH/);
  t.match(r.stderr, /is not the join secret's/);
  t.same(snapshot(dataDir), before, 'every file of the data dir is as it was');
});

t.test(
  'an ephemeral controller does not start over a data dir kept with --keep, and leaves it as it was',
  async (t) => {
    // what `rankd up --pods --keep` left, started again with another pod set's secret
    const dir = tempDir(t, 'rankd-join-secret-');
    const workDir = join(dir, 'work');
    const a = secretFile(dir, newJoinSecret(), 'a');
    const b = secretFile(dir, newJoinSecret(), 'b');
    const args = (secret: string) => [
      ...['controller', '--listen', '127.0.0.1:0', '--ephemeral', '--work-dir', workDir],
      ...['--join-secret-file', secret, '--ready-json'],
    ];
    const first = spawnDaemon([...args(a), '--keep']);
    await waitUntil('the ready line', 60_000, () => first.output().includes('"caHash"'));
    await first.stop();
    const before = snapshot(workDir);
    t.ok(
      Object.keys(before).some((p) => p.endsWith('/controller/ca.crt')),
      '--keep kept the data dir',
    );
    const r = await runCli(args(b));
    t.equal(r.code, 64, r.stderr);
    t.match(r.stderr, /was kept with --keep.*RANKD_WORK_DIR_UNSAFE/s);
    t.same(snapshot(workDir), before, 'the kept data dir is as it was');
  },
);

t.test('bad secrets are refused with RANKD_JOIN_SECRET_INVALID, naming the problem', async (t) => {
  const dir = tempDir(t, 'rankd-join-secret-');
  const cases: Array<[string, string, RegExp]> = [
    ['31 characters', 'x'.repeat(31), /at least 32 characters \(this one has 31\)/],
    ['a space', 'abcdefghijklmnop qrstuvwxyz0123456789', /character 17 is a space/],
    ['non-ASCII', 'abcdefghijklmnopqrstuvwxyzé0123456789', /character 27 is not ASCII/],
    ['a second line', 'abcdefghijklmnopqrstuvwxyz0123456789\nmore', /character 37 is a line break/],
    ['an empty file', '', /is empty/],
  ];
  for (const [what, content, message] of cases) {
    const path = join(dir, what.replace(/ /g, '-'));
    writeFileSync(path, content.length > 0 ? content + '\n' : '', { mode: 0o600 });
    const err = (() => {
      try {
        readJoinSecret(path);
      } catch (e) {
        return e as { code?: string; message: string };
      }
      return null;
    })();
    t.equal(err?.code, 'RANKD_JOIN_SECRET_INVALID', `${what}: refused`);
    t.match(err?.message, message, `${what}: ${err?.message}`);
    t.match(err?.message, path, `${what}: the message names the file`);
  }
  const missing = join(dir, 'no-such-file');
  t.throws(() => readJoinSecret(missing), { code: 'RANKD_JOIN_SECRET_INVALID', message: /cannot read .*ENOENT/ });

  // through the CLI: every command that takes a secret refuses it, exit 64, and starts nothing
  const short = join(dir, 'short');
  writeFileSync(short, 'x'.repeat(31), { mode: 0o600 });
  const work = join(dir, 'work');
  for (const args of [
    ['controller', '--listen', '127.0.0.1:0', '--ephemeral', '--work-dir', work, '--join-secret-file', short],
    ['agent', '--ephemeral', '--work-dir', work, '--controller', 'https://127.0.0.1:9', '--join-secret-file', short],
  ]) {
    const r = await runCli(args);
    t.equal(r.code, 64, `rankd ${args[0]}: ${r.stderr}`);
    t.match(r.stderr, /at least 32 characters \(this one has 31\).* \(RANKD_JOIN_SECRET_INVALID\)/);
  }
  const pods = await runCli(['up', '--pods', '--work-dir', work], {
    MASTER_ADDR: '127.0.0.1',
    RANK: '0',
    WORLD_SIZE: '1',
    RANKD_JOIN_SECRET: 'abcdefghijklmnop qrstuvwxyz0123456789',
  });
  t.equal(pods.code, 64, pods.stderr);
  t.match(pods.stderr, /RANKD_JOIN_SECRET: .*character 17 is a space \(RANKD_JOIN_SECRET_INVALID\)/);
  t.throws(() => statSync(work), { code: 'ENOENT' }, 'no work dir was made');
});

const NOT_ROOT = process.getuid?.() !== 0;

t.test(
  'a secret file the pod cannot read: RANKD_JOIN_SECRET_INVALID naming why',
  { skip: NOT_ROOT && 'needs root, to read as another user a file only root may read' },
  async (t) => {
    const dir = tempDir(t, 'rankd-join-secret-');
    chmodSync(dir, 0o755);
    const path = secretFile(dir, newJoinSecret());
    // as a pod whose Secret was mounted for another uid: nobody reads a 0600 file of root's
    const run = await runAs(['--join-secret-file', path], dir);
    t.equal(run.code, 64, run.stderr);
    t.match(
      run.stderr,
      new RegExp(`cannot read the join secret from ${path}: .*EACCES.*\\(RANKD_JOIN_SECRET_INVALID\\)`),
    );
  },
);

function runAs(extra: string[], dir: string): Promise<{ code: number | null; stderr: string }> {
  return new Promise((resolve) => {
    const child = spawn(
      'setpriv',
      ['--reuid', '65534', '--regid', '65534', '--clear-groups', process.execPath, CLI, 'up', '--pods', ...extra],
      {
        stdio: ['ignore', 'ignore', 'pipe'],
        // none of the test runner's variables: its hooks would write where nobody may not
        env: { PATH: process.env['PATH'], MASTER_ADDR: '127.0.0.1', RANK: '1', WORLD_SIZE: '2', TMPDIR: dir },
      },
    );
    let stderr = '';
    child.stderr.on('data', (d: Buffer) => (stderr += d.toString()));
    const timer = setTimeout(() => child.kill('SIGKILL'), 30_000);
    child.once('close', (code) => {
      clearTimeout(timer);
      resolve({ code, stderr });
    });
  });
}

/** Lists every process whose command line or environment holds the secret of the file given: `PID KIND` lines. */
const SCANNER = `
const { readFileSync, readdirSync } = require('node:fs');
const secret = readFileSync(process.argv[2], 'utf8').trim();
let scanned = 0;
for (const pid of readdirSync('/proc').filter((e) => /^\\d+$/.test(e))) {
  for (const kind of ['cmdline', 'environ']) {
    try {
      if (readFileSync('/proc/' + pid + '/' + kind, 'latin1').includes(secret)) console.log(pid + ' ' + kind);
      scanned++;
    } catch {}
  }
}
console.log('scanned ' + scanned);
`;

t.test(
  "RANKD_JOIN_SECRET is in no daemon's or rank's command line or environment",
  { skip: NOT_ROOT && 'needs root: a network namespace of its own, and every /proc/PID/environ' },
  async (t) => {
    const dir = tempDir(t, 'rankd-join-secret-');
    const secret = newJoinSecret();
    const file = secretFile(dir, secret);
    const scanner = join(dir, 'scan.cjs');
    writeFileSync(scanner, SCANNER);
    const bin = join(dir, 'bin');
    mkdirSync(bin);
    writeFileSync(join(bin, 'rankd'), `#!/bin/sh\nexec ${process.execPath} ${CLI} "$@"\n`, { mode: 0o755 });
    // a network namespace with only loopback: the controller of pod 0 listens on 0.0.0.0
    const argv = [
      ...['unshare', '--net', 'sh', '-c', 'ip link set lo up && exec "$@"', 'sh'],
      ...[process.execPath, CLI, 'up', '--pods', '--name', 'pod0', '--work-dir', join(dir, 'work')],
      ...['--', 'rankd', 'run', '-n', '1', '--no-label', '--', process.execPath, scanner, file],
    ];
    const up = spawn(argv[0]!, argv.slice(1), {
      stdio: ['ignore', 'pipe', 'pipe'],
      env: {
        ...process.env,
        PATH: `${bin}:${process.env['PATH'] ?? ''}`,
        MASTER_ADDR: '127.0.0.1',
        RANK: '0',
        WORLD_SIZE: '1',
        RANKD_JOIN_SECRET: secret,
      },
    });
    let out = '';
    let err = '';
    up.stdout.on('data', (d: Buffer) => (out += d.toString()));
    up.stderr.on('data', (d: Buffer) => (err += d.toString()));
    const timer = setTimeout(() => up.kill('SIGKILL'), 90_000);
    const code = await new Promise<number | null>((resolve) => up.once('close', resolve));
    clearTimeout(timer);
    t.equal(code, 0, err);
    const hits = out.split('\n').filter((l) => /^\d+ (cmdline|environ)$/.test(l));
    t.match(out, /scanned [1-9]\d*/, 'the rank scanned /proc');
    // `rankd up` itself was started with the variable: the kernel keeps a process's first
    // environment, and that is the only place it may be
    t.same(hits, [`${up.pid} environ`], "only rankd up's own starting environment holds it");
    t.notOk(out.includes(secret) || err.includes(secret), 'nothing printed it');
  },
);
