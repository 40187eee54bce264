// The agent DaemonSet's capabilities (deploy/kubernetes/agent-daemonset.yaml), tried on a real
// agent. Confined to exactly that set (setpriv's bounding set, and no_new_privs, which the
// manifest's allowPrivilegeEscalation: false gives), the agent runs a pinned rank as another
// user from that user's private directory, and cancels one. Then each capability the manifest
// adds for those acts is taken away in turn, and the act fails: none is there for nothing.
// Not tried here: SYS_RESOURCE when this machine's root lacks it (the test says so), and
// SYS_NICE, which answers the container runtime's seccomp profile rather than the kernel.
import { spawn, spawnSync } from 'node:child_process';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import t, { type Test } from 'tap';
import { parse } from 'yaml';
import { formatCpuList } from '#protocol/cpuset';
import { CLI, waitUntil } from '../helpers/daemons.js';
import { fleetUnderTest, type FleetUnderTest } from '../fleet/helpers.js';

const repo = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '../..');
const manifest = parse(fs.readFileSync(path.join(repo, 'deploy/kubernetes/agent-daemonset.yaml'), 'utf8')) as {
  spec: { template: { spec: { containers: { securityContext: { capabilities: { add: string[] } } }[] } } };
};
const CAPS = manifest.spec.template.spec.containers[0]!.securityContext.capabilities.add;

const isRoot = process.getuid?.() === 0;
const hasSetpriv = spawnSync('setpriv', ['--version']).status === 0;
const skip = !isRoot
  ? 'confining an agent to a capability set, and running ranks as another user, needs root (CI runs this as root)'
  : !hasSetpriv
    ? 'setpriv (util-linux) confines the agent here'
    : false;

/** Capability numbers, for reading CapEff (linux/capability.h). */
const CAP_NUMBER: Record<string, number> = {
  SETGID: 6,
  SETUID: 7,
  KILL: 5,
  DAC_READ_SEARCH: 2,
  SYS_NICE: 23,
  SYS_RESOURCE: 24,
};

function capSet(pid: number | 'self'): bigint {
  const hex = /^CapEff:\s*([0-9a-f]+)/m.exec(fs.readFileSync(`/proc/${pid}/status`, 'utf8'))?.[1];
  return BigInt('0x' + (hex ?? '0'));
}

/** What this test's own root holds: a capability missing here cannot be granted to the agent either. */
const ours = isRoot ? capSet('self') : 0n;
const held = (cap: string) => ((ours >> BigInt(CAP_NUMBER[cap]!)) & 1n) === 1n;

/** setpriv wrapping the agent: only `caps` survive its exec, and it can gain none back. */
function confine(caps: string[]): string[] {
  const bounding = ['-all', ...caps.filter(held).map((c) => `+${c.toLowerCase()}`)].join(',');
  return ['setpriv', '--no-new-privs', '--inh-caps=-all', `--bounding-set=${bounding}`, '--'];
}

/** A directory only nobody may enter, holding the rank's script: a user's private home. */
function privateDir(t: Test): { dir: string; script: string } {
  const parent = fs.mkdtempSync(path.join(os.tmpdir(), 'rankd-caps-'));
  t.teardown(() => fs.rmSync(parent, { recursive: true, force: true }));
  fs.chmodSync(parent, 0o755);
  const dir = path.join(parent, 'home');
  fs.mkdirSync(dir, { mode: 0o700 });
  const script = path.join(dir, 'rank.sh');
  fs.writeFileSync(
    script,
    '#!/bin/sh\necho "uid=$(id -u)"\ngrep -E "^(Cpus_allowed_list|CapEff)" /proc/self/status\nexec "$@"\n',
    { mode: 0o700 },
  );
  fs.chownSync(script, 65534, 65534);
  fs.chownSync(dir, 65534, 65534);
  return { dir, script };
}

async function fleet(t: Test, caps: string[]): Promise<FleetUnderTest> {
  const f = await fleetUnderTest(t, [{ name: 'capnode', wrap: confine(caps) }]);
  const agent = f.agents.get('capnode')!;
  const want = caps.filter(held).reduce((set, c) => set | (1n << BigInt(CAP_NUMBER[c]!)), 0n);
  t.equal(capSet(agent.pid), want, `the agent holds exactly ${caps.filter(held).join(', ') || 'nothing'}`);
  return f;
}

interface JobView {
  id: string;
  state: string;
  ranks: {
    state: string;
    pid: number | null;
    planned: { cpus: number[]; memNodes: number[] };
    actual: { cpus: number[]; memNodes: number[]; verified: boolean } | null;
    warnings: string[];
  }[];
}

async function runAsNobody(f: FleetUnderTest, dir: string, script: string) {
  return f.cli(['run', '-n', '1', '-q', '--user', 'nobody', '--cwd', dir, '--', script, 'sleep', '2'], 60_000);
}

t.test(
  'confined to the manifest, the agent runs a pinned rank as nobody from a private directory',
  { skip },
  async (t) => {
    if (!held('SYS_RESOURCE')) t.comment('this machine gives root no SYS_RESOURCE: the memlock raise is not tried');
    const f = await fleet(t, CAPS);
    const { dir, script } = privateDir(t);
    const r = await runAsNobody(f, dir, script);
    t.equal(r.code, 0, `the job succeeded ${r.stderr}`);
    t.match(r.stdout, /^0: uid=65534$/m, 'the rank ran as nobody');
    t.match(r.stdout, /^0: CapEff:\s*0+$/m, 'with no capability left');
    const jobs = JSON.parse((await f.cli(['jobs', '--json'])).stdout) as { jobs: { id: string }[] };
    const view = JSON.parse((await f.cli(['job', jobs.jobs[0]!.id, '--json'])).stdout) as JobView;
    const rank = view.ranks[0]!;
    t.ok(rank.planned.cpus.length > 0 && rank.planned.memNodes.length > 0, 'the plan pins CPUs and memory');
    t.same(rank.actual?.cpus, rank.planned.cpus, 'the rank got the planned CPUs');
    t.equal(rank.actual?.verified, true, 'its binding read back as planned');
    const seen = /^0: Cpus_allowed_list:\s*(\S+)$/m.exec(r.stdout)?.[1];
    t.equal(seen, formatCpuList(rank.planned.cpus), 'as the rank itself saw them');
    if (rank.warnings.length > 0) t.comment(`rank warnings: ${rank.warnings.join('; ')}`);
  },
);

t.test('without SETUID and SETGID the rank cannot become nobody, and does not run', { skip }, async (t) => {
  const f = await fleet(
    t,
    CAPS.filter((c) => c !== 'SETUID' && c !== 'SETGID'),
  );
  const { dir, script } = privateDir(t);
  const r = await runAsNobody(f, dir, script);
  t.not(r.code, 0, 'the job fails');
  t.match(r.stdout + r.stderr, /RANKD_RANK_USER_SWITCH/, 'named by the switch that failed');
  t.notMatch(r.stdout, /uid=/, 'the script never ran');
});

t.test('without DAC_READ_SEARCH the preflight cannot see into the private directory', { skip }, async (t) => {
  const f = await fleet(
    t,
    CAPS.filter((c) => c !== 'DAC_READ_SEARCH'),
  );
  const { dir, script } = privateDir(t);
  const r = await runAsNobody(f, dir, script);
  t.not(r.code, 0, 'the job fails');
  t.match(r.stdout + r.stderr, /RANKD_RANK_(BAD_CWD|PROGRAM_NOT_EXECUTABLE|PROGRAM_NOT_FOUND)/, r.stderr);
  t.notMatch(r.stdout, /uid=/, 'the script never ran');
});

/** Starts `sleep 300` as nobody and returns the job and the rank's pid once it runs. */
async function sleepingRank(t: Test, f: FleetUnderTest): Promise<{ id: string; pid: number }> {
  const run = spawn(
    process.execPath,
    [CLI, 'run', '-n', '1', '-q', '--grace', '1', '--user', 'nobody', '--cwd', '/', '--', 'sleep', '300'],
    { env: { ...process.env, ...f.env }, stdio: 'ignore' },
  );
  t.teardown(() => {
    if (run.exitCode === null) run.kill('SIGKILL');
  });
  return waitUntil('the sleeping rank', 30_000, async () => {
    const jobs = JSON.parse((await f.cli(['jobs', '--json'])).stdout) as { jobs: { id: string }[] };
    const id = jobs.jobs[0]?.id;
    if (!id) return undefined;
    const view = JSON.parse((await f.cli(['job', id, '--json'])).stdout) as JobView;
    const pid = view.ranks[0]?.pid;
    return view.ranks[0]?.state === 'running' && pid ? { id, pid } : undefined;
  });
}

function alive(pid: number): boolean {
  try {
    return !/^\S+ \(.*\) Z/.test(fs.readFileSync(`/proc/${pid}/stat`, 'utf8'));
  } catch {
    return false;
  }
}

t.test("confined to the manifest, the agent ends nobody's rank on cancel", { skip }, async (t) => {
  const f = await fleet(t, CAPS);
  const rank = await sleepingRank(t, f);
  t.equal(fs.statSync(`/proc/${rank.pid}`).uid, 65534, "the rank is nobody's");
  const c = await f.cli(['cancel', rank.id]);
  t.equal(c.code, 0, c.stderr);
  await waitUntil('the rank to be gone', 10_000, () => !alive(rank.pid));
  t.pass('the rank is gone');
});

t.test("without KILL the agent cannot signal nobody's rank", { skip }, async (t) => {
  const f = await fleet(
    t,
    CAPS.filter((c) => c !== 'KILL'),
  );
  const rank = await sleepingRank(t, f);
  // the rank is this test's to end, by its pid, whatever the agent does
  t.teardown(() => {
    if (alive(rank.pid)) process.kill(rank.pid, 'SIGKILL');
  });
  await f.cli(['cancel', rank.id]);
  // SIGTERM, a 1 s grace, then SIGKILL: all refused with EPERM
  await new Promise((r) => setTimeout(r, 3000));
  t.ok(alive(rank.pid), 'the rank outlives the cancel and its grace');
});
