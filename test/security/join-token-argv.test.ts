// Join tokens stay out of argv, which every user of a node can read (ps, /proc/PID/cmdline).
// Real agents enroll with the token from a 0600 file (--join-token-file, and the lines
// `rankd join-command` prints, run as printed) and from RANKD_JOIN_TOKEN; then no process's
// command line on this machine holds the secret. --join-token still works, and warns.
import { spawn } from 'node:child_process';
import { chmodSync, readFileSync, readdirSync, statSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import t, { type Test } from 'tap';
import {
  CLI,
  runCli,
  spawnDaemon,
  startController,
  waitForNode,
  waitUntil,
  type ControllerHandle,
  type Daemon,
} from '../helpers/daemons.js';
import { scratchDir } from '../helpers/scratch.js';

let controller: ControllerHandle;
t.before(async () => {
  controller = await startController();
});
t.teardown(() => controller?.stop());

async function mint(): Promise<string> {
  const r = await controller.api<{ token: string }>('/v1/join-tokens', {
    method: 'POST',
    body: { description: 'argv test' },
  });
  if (r.status !== 200) throw new Error(`mint: ${r.status}`);
  return r.body.token;
}

/** The PIDs whose command line (what ps shows) contains `text`. */
function cmdlinesHolding(text: string): number[] {
  const found: number[] = [];
  for (const entry of readdirSync('/proc')) {
    if (!/^\d+$/.test(entry)) continue;
    try {
      if (readFileSync(`/proc/${entry}/cmdline`).toString('utf8').includes(text)) found.push(Number(entry));
    } catch {
      // gone meanwhile
    }
  }
  return found;
}

function baseArgs(name: string): string[] {
  const dir = scratchDir('rankd-argv-');
  return [
    '--state-dir',
    join(dir, 'state'),
    '--spool-dir',
    join(dir, 'spool'),
    '--name',
    name,
    '--config',
    '/dev/null',
  ];
}

async function enrolled(t: Test, agent: Daemon, name: string, secret: string): Promise<void> {
  t.teardown(() => agent.stop());
  await waitForNode(controller, name, 'ready', 30_000);
  const own = readFileSync(`/proc/${agent.pid}/cmdline`).toString('utf8');
  t.match(own, /\bagent\b/, 'this is the agent process');
  t.notOk(own.includes(secret), "the agent's own command line does not hold the secret");
  t.same(cmdlinesHolding(secret), [], 'no command line on this machine holds the secret');
}

t.test('--join-token-file: a real agent enrolls, and the secret is in no command line', async (t) => {
  const token = await mint();
  const file = join(scratchDir('rankd-tok-'), 'token');
  writeFileSync(file, token + '\n', { mode: 0o600 });
  const agent = spawnDaemon([
    'agent',
    '--controller',
    controller.url,
    '--ca-hash',
    controller.caHash,
    '--join-token-file',
    file,
    ...baseArgs('by-file'),
  ]);
  await enrolled(t, agent, 'by-file', token.split('.')[1]!);
  t.notMatch(agent.output(), /readable by other users/);
});

t.test('a join token file that other users can read still enrolls, with a warning that says so', async (t) => {
  const token = await mint();
  const file = join(scratchDir('rankd-tok-'), 'token');
  writeFileSync(file, token + '\n');
  chmodSync(file, 0o644);
  const agent = spawnDaemon([
    'agent',
    '--controller',
    controller.url,
    '--ca-hash',
    controller.caHash,
    '--join-token-file',
    file,
    ...baseArgs('by-loose-file'),
  ]);
  await enrolled(t, agent, 'by-loose-file', token.split('.')[1]!);
  t.match(agent.output(), /the join token file .* is readable by other users \(mode 644\): keep it 0600/);
});

t.test('RANKD_JOIN_TOKEN: a real agent enrolls, and the secret is in no command line', async (t) => {
  const token = await mint();
  const agent = spawnDaemon(
    ['agent', '--controller', controller.url, '--ca-hash', controller.caHash, ...baseArgs('by-env')],
    { RANKD_JOIN_TOKEN: token },
  );
  await enrolled(t, agent, 'by-env', token.split('.')[1]!);
});

t.test(
  'rankd join-command prints lines that, run as printed, put the token in a 0600 file and enroll an agent from it',
  async (t) => {
    const tokenFile = join(scratchDir('rankd-jc-'), 'etc', 'token');
    const r = await runCli(['join-command', '--token-file', tokenFile, '--json'], controller.clientEnv);
    t.equal(r.code, 0, r.stderr);
    const printed = JSON.parse(r.stdout) as { token: string; writeToken: string; command: string; tokenFile: string };
    const secret = printed.token.split('.')[1]!;
    t.notOk(printed.command.includes(secret), 'the agent command line holds no token');
    t.match(
      printed.command,
      /^rankd agent --controller 'https:\/\/127\.0\.0\.1:\d+' --join-token-file '[^']+' --ca-hash sha256:[0-9a-f]{64}$/,
    );
    const count = async () => (await controller.api<{ tokens: unknown[] }>('/v1/join-tokens')).body.tokens.length;
    const before = await count();
    const relative = await runCli(['join-command', '--token-file', 'token'], controller.clientEnv);
    t.equal(relative.code, 64, 'a relative --token-file is refused…');
    t.equal(await count(), before, '…before a token is minted');
    const text = await runCli(['join-command', '--token-file', tokenFile], controller.clientEnv);
    const lines = text.stdout.trim().split('\n');
    t.equal(lines.length, 3, 'a comment, the token line, the agent line');
    t.notOk(lines[2]!.includes(text.stdout.match(/'([a-z0-9]{6})\.([a-z0-9]{16})'/)![2]!), 'the plain form too');

    // the token line, as a shell runs it: printf is a builtin, so the token is in no argv of its own
    const wrote = await new Promise<number | null>((resolve) =>
      spawn('/bin/sh', ['-c', printed.writeToken], { stdio: 'ignore' }).once('exit', resolve),
    );
    t.equal(wrote, 0);
    t.equal(statSync(tokenFile).mode & 0o777, 0o600, 'the token file is 0600');
    t.equal(readFileSync(tokenFile, 'utf8'), printed.token + '\n');

    // the agent line, as printed, with `rankd` being this build
    const child = spawn(
      '/bin/sh',
      [
        '-c',
        `rankd() { exec "${process.execPath}" "${CLI}" "$@"; }; ${printed.command} ${baseArgs('by-join-command').join(' ')}`,
      ],
      { stdio: ['ignore', 'pipe', 'pipe'] },
    );
    let out = '';
    child.stdout.on('data', (d: Buffer) => (out += d.toString()));
    child.stderr.on('data', (d: Buffer) => (out += d.toString()));
    t.teardown(async () => {
      if (child.exitCode !== null) return;
      child.kill('SIGTERM');
      await new Promise((resolve) => child.once('exit', resolve));
    });
    await waitForNode(controller, 'by-join-command', 'ready', 30_000).catch((err: Error) => {
      throw new Error(`${err.message}\n${out}`);
    });
    t.notOk(readFileSync(`/proc/${child.pid}/cmdline`).toString('utf8').includes(secret));
    t.same(cmdlinesHolding(secret), [], 'no command line on this machine holds the secret');
  },
);

t.test('--join-token still enrolls, but warns that ps shows it', async (t) => {
  const token = await mint();
  const agent = spawnDaemon([
    'agent',
    '--controller',
    controller.url,
    '--ca-hash',
    controller.caHash,
    '--join-token',
    token,
    ...baseArgs('by-flag'),
  ]);
  t.teardown(() => agent.stop());
  await waitForNode(controller, 'by-flag', 'ready', 30_000);
  await waitUntil('the warning', 5000, () =>
    /warning: --join-token puts the join token in this process's command line/.test(agent.output()),
  );
  t.pass('warned on stderr');
});

t.test('the help says where a join token may come from, and what --join-token costs', async (t) => {
  const r = await runCli(['agent', '--help']);
  t.match(r.stdout, /--join-token-file <file>/);
  t.match(r.stdout, /RANKD_JOIN_TOKEN/);
  // commander wraps the help to 80 columns, wherever the words fall
  t.match(r.stdout.replace(/\s+/g, ' '), /visible to every user in ps/);
});
