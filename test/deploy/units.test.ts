// The systemd units and install.sh in deploy/: the keys the agent's survival depends on,
// the command lines against the real CLI, systemd's own verifier where it exists, and a
// real install into a temporary root.
import t from 'tap';
import { spawnSync } from 'node:child_process';
import {
  cpSync,
  existsSync,
  mkdirSync,
  mkdtempSync,
  readFileSync,
  readdirSync,
  readlinkSync,
  rmSync,
  statSync,
  writeFileSync,
} from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { readConfigFile, resolveAgentConfig } from '#agent/config';
import { expectedSupervisorVersion } from '#agent/ranks/supervisor-binary';

const repo = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '../..');
const deploy = path.join(repo, 'deploy');
const cli = path.join(repo, 'packages/cli/dist/main.js');
const installSh = path.join(deploy, 'install.sh');

type Unit = Map<string, Map<string, string[]>>;

/** systemd's INI: [Section], Key=Value, repeated keys accumulate, # and ; comments. */
function parseUnit(text: string): Unit {
  const unit: Unit = new Map();
  let section: Map<string, string[]> | undefined;
  for (const raw of text.split('\n')) {
    const line = raw.trim();
    if (line === '' || line.startsWith('#') || line.startsWith(';')) continue;
    const header = /^\[(.+)\]$/.exec(line);
    if (header) {
      section = unit.get(header[1]!) ?? new Map();
      unit.set(header[1]!, section);
      continue;
    }
    const eq = line.indexOf('=');
    if (!section || eq <= 0) throw new Error(`not a unit line: ${raw}`);
    const key = line.slice(0, eq).trim();
    section.set(key, [...(section.get(key) ?? []), line.slice(eq + 1).trim()]);
  }
  return unit;
}

function one(unit: Unit, section: string, key: string): string | undefined {
  return unit.get(section)?.get(key)?.at(-1);
}

function run(argv: string[], opts: { input?: string; env?: NodeJS.ProcessEnv } = {}) {
  const r = spawnSync(argv[0]!, argv.slice(1), {
    encoding: 'utf8',
    input: opts.input ?? '',
    env: opts.env ?? process.env,
    timeout: 120_000,
  });
  return { code: r.status, stdout: r.stdout ?? '', stderr: r.stderr ?? '' };
}

function tempDir(t: { teardown(fn: () => void): void }, prefix: string): string {
  const dir = mkdtempSync(path.join(os.tmpdir(), prefix));
  t.teardown(() => rmSync(dir, { recursive: true, force: true }));
  return dir;
}

const agentUnit = parseUnit(readFileSync(path.join(deploy, 'rankd-agent.service'), 'utf8'));
const controllerUnit = parseUnit(readFileSync(path.join(deploy, 'rankd-controller.service'), 'utf8'));

t.test('the agent unit keeps ranks alive across agent restarts and gives them RDMA limits', async (t) => {
  t.equal(one(agentUnit, 'Service', 'Restart'), 'always');
  t.equal(one(agentUnit, 'Service', 'KillMode'), 'process', 'only the agent is signalled: ranks survive its restart');
  t.equal(one(agentUnit, 'Service', 'Delegate'), 'yes', 'the agent owns its cgroup subtree');
  t.equal(one(agentUnit, 'Service', 'LimitMEMLOCK'), 'infinity', 'verbs can pin memory');
  const nofile = Number(one(agentUnit, 'Service', 'LimitNOFILE'));
  t.ok(nofile >= 65536, `LimitNOFILE raised (${nofile})`);
  t.equal(one(agentUnit, 'Service', 'StateDirectory'), 'rankd', 'state in /var/lib/rankd');
  t.equal(one(agentUnit, 'Install', 'WantedBy'), 'multi-user.target');
  t.match(
    one(agentUnit, 'Service', 'ExecStart') ?? '',
    /^\/opt\/rankd\/bin\/rankd agent --config \/etc\/rankd\/agent\.json$/,
  );
});

t.test(
  'the controller unit listens on loopback by default and keeps its data in /var/lib/rankd-controller',
  async (t) => {
    const env = controllerUnit.get('Service')?.get('Environment') ?? [];
    t.ok(env.includes('RANKD_LISTEN=127.0.0.1:7480'), 'default listen address is loopback');
    t.equal(one(controllerUnit, 'Service', 'EnvironmentFile'), '-/etc/rankd/controller.env', 'optional override file');
    const exec = one(controllerUnit, 'Service', 'ExecStart') ?? '';
    t.match(exec, /^\/opt\/rankd\/bin\/rankd controller /);
    t.match(exec, /--listen \$\{RANKD_LISTEN\}/);
    t.match(exec, /--data-dir \/var\/lib\/rankd-controller(\s|$)/);
    // a shared cluster's default: 1 core per rank for jobs without -c, as srun's 1 CPU per task
    t.ok(env.includes('RANKD_DEFAULT_CPUS_PER_RANK=1'), 'a systemd-installed controller defaults to 1 core per rank');
    t.match(exec, /--default-cpus-per-rank \$\{RANKD_DEFAULT_CPUS_PER_RANK\}(\s|$)/, 'overridable in controller.env');
    t.equal(one(controllerUnit, 'Service', 'StateDirectory'), 'rankd-controller');
    t.equal(one(controllerUnit, 'Service', 'Restart'), 'always');
    t.equal(one(controllerUnit, 'Install', 'WantedBy'), 'multi-user.target');
  },
);

t.test('every flag the units pass exists in the real CLI', async (t) => {
  for (const [unit, command] of [
    [agentUnit, 'agent'],
    [controllerUnit, 'controller'],
  ] as const) {
    const help = run([process.execPath, cli, command, '--help']);
    t.equal(help.code, 0, `rankd ${command} --help`);
    const flags = (one(unit, 'Service', 'ExecStart') ?? '').match(/--[a-z][a-z-]*/g) ?? [];
    t.ok(flags.length > 0, `${command}: ExecStart has flags`);
    for (const flag of flags) t.match(help.stdout, new RegExp(`${flag}\\b`), `rankd ${command} knows ${flag}`);
  }
});

t.test('install.sh into a temporary root', async (t) => {
  const root = tempDir(t, 'rankd-install-');
  const r = run(
    [
      'sh',
      installSh,
      '--root',
      root,
      '--controller',
      'https://127.0.0.1:7480',
      '--ca-hash',
      'sha256:' + 'ab'.repeat(32),
      '--token-stdin',
      '--name',
      'node-a',
      '--label',
      'rack=r1',
      '--label',
      'zone=a b',
    ],
    { input: 'join-token-123\n' },
  );
  t.equal(r.code, 0, `install.sh exits 0\n${r.stderr}`);

  const configFile = path.join(root, 'etc/rankd/agent.json');
  const config = JSON.parse(readFileSync(configFile, 'utf8'));
  t.same(config, {
    controller: 'https://127.0.0.1:7480',
    tokenFile: '/etc/rankd/token',
    spoolDir: '/var/lib/rankd/spool',
    stateDir: '/var/lib/rankd/agent',
    caHash: 'sha256:' + 'ab'.repeat(32),
    name: 'node-a',
    labels: { rack: 'r1', zone: 'a b' },
  });
  // The agent's own reader must accept what install.sh wrote.
  const resolved = resolveAgentConfig(readConfigFile(configFile, true));
  t.equal(resolved.controller, 'https://127.0.0.1:7480');
  t.equal(resolved.stateDir, '/var/lib/rankd/agent');
  t.same(resolved.labels, { rack: 'r1', zone: 'a b' });

  const token = path.join(root, 'etc/rankd/token');
  t.equal(readFileSync(token, 'utf8'), 'join-token-123\n');
  t.equal(statSync(token).mode & 0o777, 0o600, 'the token is readable by root only');
  t.ok(statSync(path.join(root, 'var/lib/rankd/spool')).isDirectory(), 'spool dir');
  t.equal(statSync(path.join(root, 'var/lib/rankd')).mode & 0o777, 0o750);

  const unit = path.join(root, 'etc/systemd/system/rankd-agent.service');
  t.equal(
    readFileSync(unit, 'utf8'),
    readFileSync(path.join(deploy, 'rankd-agent.service'), 'utf8'),
    'the unit is installed as shipped',
  );
  t.equal(
    readlinkSync(path.join(root, 'etc/systemd/system/multi-user.target.wants/rankd-agent.service')),
    '/etc/systemd/system/rankd-agent.service',
    'enabled by its symlink',
  );

  const wrapper = readFileSync(path.join(root, 'opt/rankd/bin/rankd'), 'utf8');
  t.match(wrapper, /^#!\/bin\/sh\nexec \S*node \/opt\/rankd\/app\/packages\/cli\/dist\/main\.js "\$@"\n$/);
  t.ok(statSync(path.join(root, 'opt/rankd/bin/rankd')).mode & 0o111, 'the wrapper is executable');
  // The copied program runs on its own files: production dependencies were enough.
  const version = run([process.execPath, path.join(root, 'opt/rankd/app/packages/cli/dist/main.js'), 'version']);
  t.equal(version.code, 0, version.stderr);
  t.match(version.stdout, /^rankd \d+\.\d+\.\d+/);
  const agentHelp = run([
    process.execPath,
    path.join(root, 'opt/rankd/app/packages/cli/dist/main.js'),
    'agent',
    '--help',
  ]);
  t.equal(agentHelp.code, 0, agentHelp.stderr);
  // the rank supervisor and its version header travel in dist: the installed agent finds
  // and accepts them there (a tree without src)
  const agentDist = path.join(root, 'opt/rankd/app/packages/agent/dist');
  const supervisorVersion = expectedSupervisorVersion();
  t.equal(
    run([path.join(agentDist, 'native/rank-supervisor'), '--version']).stdout,
    `rank-supervisor ${supervisorVersion}\n`,
    'the rank supervisor is installed and runs',
  );
  const found = run([
    process.execPath,
    '--input-type=module',
    '-e',
    `
    import { findSupervisor } from ${JSON.stringify(path.join(agentDist, 'ranks/supervisor-binary.js'))};
    console.log(JSON.stringify(findSupervisor()));
  `,
  ]);
  t.equal(found.code, 0, found.stderr);
  t.same(
    JSON.parse(found.stdout),
    { path: path.join(agentDist, 'native/rank-supervisor'), version: supervisorVersion, problem: null },
    'the installed agent uses its own supervisor',
  );
  t.same(
    run(['sh', '-c', `find ${JSON.stringify(path.join(root, 'opt/rankd/app/packages'))} -name '*.pl'`]).stdout,
    '',
    'no perl is installed',
  );
  t.notOk(existsSync(path.join(root, 'opt/rankd/app/node_modules/typescript')), 'dev tools are not copied');
  t.notOk(existsSync(path.join(root, 'opt/rankd/app/node_modules/tap')), 'test tools are not copied');

  const analyze = run(['sh', '-c', 'command -v systemd-analyze']).stdout.trim();
  const skip =
    analyze && existsSync('/lib/systemd/system/multi-user.target')
      ? false
      : 'systemd-analyze is not installed here: the INI checks above stand alone';
  t.test('systemd-analyze verify accepts both units', { skip }, async (t) => {
    // verify --root resolves the default dependencies (sysinit.target, …) inside the root.
    cpSync('/lib/systemd/system', path.join(root, 'usr/lib/systemd/system'), {
      recursive: true,
      verbatimSymlinks: true,
    });
    cpSync(
      path.join(deploy, 'rankd-controller.service'),
      path.join(root, 'etc/systemd/system/rankd-controller.service'),
    );
    for (const name of ['rankd-agent.service', 'rankd-controller.service']) {
      const v = run([analyze, 'verify', `--root=${root}`, path.join(root, 'etc/systemd/system', name)]);
      t.equal(v.code, 0, `${name}: exit 0`);
      t.equal(v.stderr.trim(), '', `${name}: no warnings`);
    }
    // The same check on a broken copy must complain, or the two assertions above prove nothing.
    const broken = path.join(root, 'etc/systemd/system/rankd-broken.service');
    writeFileSync(broken, readFileSync(unit, 'utf8').replace('KillMode=process', 'KillMode=sometimes'));
    const v = run([analyze, 'verify', `--root=${root}`, broken]);
    t.match(v.stderr, /kill mode/i, 'a bad KillMode is reported');
  });
});

t.test('install.sh --dry-run prints its steps and changes nothing', async (t) => {
  const root = tempDir(t, 'rankd-dry-');
  const r = run([
    'sh',
    installSh,
    '--dry-run',
    '--root',
    root,
    '--controller',
    'https://ctl.example:7480',
    '--token',
    'x',
    '--allow-root',
  ]);
  t.equal(r.code, 0, r.stderr);
  t.same(readdirSync(root), [], 'the root is still empty');
  t.match(r.stdout, new RegExp(`\\+ write ${root}/etc/rankd/agent\\.json`));
  t.match(r.stdout, /"allowRoot": true/);
  t.match(r.stdout, /\+ ln -sfn \/etc\/systemd\/system\/rankd-agent\.service/);
});

t.test('install.sh refuses bad input with exit 64 and a reason', async (t) => {
  const root = tempDir(t, 'rankd-bad-');
  mkdirSync(path.join(root, 'x'));
  // a built tree whose rank supervisor could not be built: its agent would refuse every rank
  mkdirSync(path.join(root, 'x/y/packages/cli/dist'), { recursive: true });
  writeFileSync(path.join(root, 'x/y/packages/cli/dist/main.js'), '');
  const cases: Array<[string[], RegExp]> = [
    [[], /--controller URL is required/],
    [['--controller', 'ftp://h'], /must be an https:\/\/ URL/],
    [['--controller', 'https://h', '--label', 'novalue'], /--label takes key=value/],
    [['--controller', 'https://h', '--token-file', 'relative/token'], /absolute path/],
    [['--controller', 'https://h', '--bogus'], /unknown argument "--bogus"/],
    [['--controller', 'https://h', '--from-dir', path.join(root, 'x')], /not a built rankd checkout/],
    [
      ['--controller', 'https://h', '--from-dir', path.join(root, 'x/y')],
      /has no rank supervisor .*install a C compiler \(apt-get install gcc\)/,
    ],
    [['--controller', 'http://h'], /https:\/\//],
    [['--controller', 'https://h', '--ca-hash', 'md5:x'], /--ca-hash must look like sha256/],
  ];
  for (const [args, message] of cases) {
    const r = run(['sh', installSh, '--root', root, ...args]);
    t.equal(r.code, 64, args.join(' ') || '(no arguments)');
    t.match(r.stderr, message);
  }
  t.same(readdirSync(root), ['x'], 'nothing was written');
});
