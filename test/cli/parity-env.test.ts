// srun parity: the environment a rank sees. Each row runs /usr/bin/env as one task under
// a local Slurm and as one rank under `rankd run`, both clients given the same shell
// environment, and compares the variables that matter to srun, torchrun and conda users.
// Where rankd deliberately differs, the row names the variable, both values and why.
import { execFileSync } from 'node:child_process';
import t, { type Test } from 'tap';
import { parityMissing, parityRig, type Outcome } from '../helpers/srun-parity.js';

const skip = parityMissing();

/** Set, whatever its value (srun's job ids, the agent's PATH). */
const SET = Symbol('set');
/** A variable's value in the rank; null: unset. */
type Value = string | null | typeof SET;

interface Row {
  name: string;
  /** srun's options, then rankd run's; both run `/usr/bin/env` as one task. */
  srun: string[];
  rankd: string[];
  /** The client's shell environment, over SHELL_ENV. */
  env?: Record<string, string>;
  /** What both tools must show. */
  same: Record<string, Value>;
  /** Where rankd deliberately differs. */
  differs?: Record<string, Differs>;
}

interface Differs {
  srun: Value;
  rankd: Value;
  why: string;
}

/** A conda/virtualenv user's shell, logged in as alice, who submits as root (srun --uid needs root). */
const SHELL_ENV = {
  FOO: 'bar',
  LD_LIBRARY_PATH: '/opt/x/lib',
  PYTHONPATH: '/opt/py',
  VIRTUAL_ENV: '/opt/venv',
  PATH: '/opt/venv/bin:/usr/local/bin:/usr/bin:/bin',
  HOME: '/home/alice',
  USER: 'alice',
  LOGNAME: 'alice',
  SHELL: '/bin/zsh',
};

/** HOME, USER, LOGNAME and SHELL as the node's passwd gives them for `user`. */
function identityOf(user: string): Record<string, string> {
  const f = execFileSync('getent', ['passwd', user], { encoding: 'utf8' }).split('\n')[0]!.split(':');
  return { HOME: f[5]!, USER: f[0]!, LOGNAME: f[0]!, SHELL: f[6] || '/bin/sh' };
}

const IDENTITY_WHY =
  "rankd sets the identity of the Unix user the rank runs as, from the node's passwd, as a login would; srun passes the submitter's";

function identityDiffers(user: string): Row['differs'] {
  const mine = identityOf(user);
  const out: NonNullable<Row['differs']> = {};
  for (const k of ['HOME', 'USER', 'LOGNAME', 'SHELL'] as const)
    out[k] = { srun: SHELL_ENV[k], rankd: mine[k]!, why: IDENTITY_WHY };
  return out;
}

const SLURM_ONLY: Record<string, Differs> = {
  SLURM_JOB_ID: {
    srun: SET,
    rankd: null,
    why: 'srun describes its step in SLURM_*; rankd never sets or exports them (a program would believe it runs in a Slurm step)',
  },
};
const AGENT_PATH: Differs = {
  srun: null,
  rankd: SET,
  why: "rankd gives a rank the agent's PATH and locale when the shell's are not exported: it looks argv[0] up on PATH, where srun's NONE wants an absolute path",
};

function rows(): Row[] {
  return [
    {
      name: 'default: the whole environment, as srun --export=ALL (a root rank)',
      srun: [],
      rankd: [],
      same: { FOO: 'bar', PYTHONPATH: '/opt/py', VIRTUAL_ENV: '/opt/venv', PATH: SHELL_ENV.PATH },
      differs: {
        LD_LIBRARY_PATH: {
          srun: '/opt/x/lib',
          rankd: null,
          why: 'the rank runs as root: rankd leaves loader variables out of a root rank, with a warning, where srun passes them',
        },
        ...identityDiffers('root'),
        ...SLURM_ONLY,
      },
    },
    {
      name: '--export ALL as another Unix user (srun --uid, rankd --user)',
      srun: ['--export=ALL', '--uid', 'nobody'],
      rankd: ['--export', 'ALL', '--user', 'nobody'],
      same: {
        FOO: 'bar',
        LD_LIBRARY_PATH: '/opt/x/lib',
        PYTHONPATH: '/opt/py',
        VIRTUAL_ENV: '/opt/venv',
        PATH: SHELL_ENV.PATH,
      },
      differs: { ...identityDiffers('nobody'), ...SLURM_ONLY },
    },
    {
      name: '--export NONE',
      srun: ['--export=NONE'],
      rankd: ['--export', 'NONE'],
      same: { FOO: null, LD_LIBRARY_PATH: null, PYTHONPATH: null, VIRTUAL_ENV: null },
      differs: {
        PATH: AGENT_PATH,
        HOME: {
          srun: null,
          rankd: identityOf('root').HOME!,
          why: IDENTITY_WHY.replace("; srun passes the submitter's", '; srun sets none under NONE'),
        },
        ...SLURM_ONLY,
      },
    },
    {
      name: '--export VAR,VAR=value: those alone',
      srun: ['--export=FOO,BAR=baz'],
      rankd: ['--export', 'FOO,BAR=baz'],
      same: { FOO: 'bar', BAR: 'baz', LD_LIBRARY_PATH: null, PYTHONPATH: null, VIRTUAL_ENV: null },
      differs: { PATH: AGENT_PATH, ...SLURM_ONLY },
    },
    {
      name: "--export ALL,VAR=value: the shell's own value wins",
      srun: ['--export=ALL,FOO=given,BAR=given'],
      rankd: ['--export', 'ALL,FOO=given,BAR=given'],
      same: { FOO: 'bar', BAR: 'given', PYTHONPATH: '/opt/py' },
    },
    {
      name: "rankd's own client settings",
      srun: [],
      rankd: [],
      // srun's client gets these values; rankd's gets its cluster's (the rig's), which must not reach the rank either
      env: { RANKD_TOKEN: 'shell-token', RANKD_URL: 'https://controller.example:7070' },
      same: { FOO: 'bar' },
      differs: {
        RANKD_TOKEN: {
          srun: 'shell-token',
          rankd: null,
          why: 'a credential: rankd never exports RANKD_*; to srun it is any variable',
        },
        RANKD_URL: {
          srun: 'https://controller.example:7070',
          rankd: null,
          why: "rankd's client settings are the client's, never a rank's",
        },
        RANKD_JOB_ID: { srun: null, rankd: SET, why: 'rankd names the job in RANKD_JOB_ID (srun: SLURM_JOB_ID)' },
      },
    },
    {
      name: 'a submitter inside another job: its Slurm and PMI variables',
      srun: [],
      rankd: [],
      // a SLURM_* srun itself neither reads nor sets (with SLURM_JOB_ID srun would join that job)
      env: { SLURM_SITE_MARK: '4242', PMI_FD: '9', PMI_RANK: '5' },
      same: {},
      differs: {
        SLURM_SITE_MARK: {
          srun: '4242',
          rankd: null,
          why: 'rankd never exports SLURM_*: inside an allocation they would make MPI, torch and mpi4py reach for Slurm',
        },
        PMI_FD: {
          srun: '9',
          rankd: '3',
          why: "rankd serves each rank its own PMI-1 channel (fd 3); the submitter's is never exported",
        },
        PMI_RANK: { srun: '5', rankd: '0', why: "the same: the rank's own PMI rank" },
      },
    },
    {
      name: 'what rankd sets wins over the exported environment; --env wins over both',
      srun: [],
      rankd: ['--gpu-bind', 'visible', '--env', 'FOO=explicit'],
      env: { RANK: '7', WORLD_SIZE: '99', CUDA_VISIBLE_DEVICES: '5' },
      same: { PYTHONPATH: '/opt/py' },
      differs: {
        RANK: {
          srun: '7',
          rankd: '0',
          why: "rankd sets torch's rank variables (srun: SLURM_PROCID) and they win over the shell's",
        },
        WORLD_SIZE: { srun: '99', rankd: '1', why: 'the same' },
        CUDA_VISIBLE_DEVICES: {
          srun: '5',
          rankd: '',
          why: "--gpu-bind visible sets the rank's GPUs (none here), over the shell's; srun sets it only with --gres",
        },
        FOO: { srun: 'bar', rankd: 'explicit', why: '--env wins over the exported environment; srun has no --env' },
      },
    },
  ];
}

/** The rank's environment from `env`'s output (every value here is one line). */
function parseEnv(o: Outcome, who: string): Map<string, string> {
  if (o.code !== 0) throw new Error(`${who} exited ${o.code}: ${o.stderr}`);
  const out = new Map<string, string>();
  for (const line of o.stdout.split('\n')) {
    const eq = line.indexOf('=');
    if (eq > 0) out.set(line.slice(0, eq), line.slice(eq + 1));
  }
  return out;
}

function check(t: Test, env: Map<string, string>, name: string, want: Value, what: string): void {
  const got = env.get(name) ?? null;
  if (want === SET) t.not(got, null, `${what}: ${name} is set`);
  else t.equal(got, want, `${what}: ${name}`);
}

t.test('the environment a rank sees under srun and rankd run', { skip: skip ?? false }, async (t) => {
  const rig = await parityRig(t);
  const clusterToken = rig.rankdClientEnv['RANKD_TOKEN']!;
  for (const row of rows()) {
    await t.test(row.name, async (t) => {
      const env = { ...SHELL_ENV, ...row.env };
      const srun = parseEnv(await rig.srun(['-n', '1', ...row.srun, '--', '/usr/bin/env'], { env }), 'srun');
      const rankdOut = await rig.rankd(['--no-label', '-n', '1', ...row.rankd, '--', '/usr/bin/env'], { env });
      const rankd = parseEnv(rankdOut, 'rankd run');
      for (const [name, want] of Object.entries(row.same)) {
        check(t, srun, name, want, 'srun');
        check(t, rankd, name, want, 'rankd');
      }
      for (const [name, d] of Object.entries(row.differs ?? {})) {
        check(t, srun, name, d.srun, `srun (${d.why})`);
        check(t, rankd, name, d.rankd, `rankd (${d.why})`);
      }
      // whatever the row, the client's own token is nowhere in the rank's environment
      t.notOk(rankdOut.stdout.includes(clusterToken), "the client's token reaches no rank");
      t.same(
        [...rankd.keys()].filter((k) => k.startsWith('RANKD_')).sort(),
        ['RANKD_ATTEMPT', 'RANKD_JOB_ID', 'RANKD_MAX_RESTARTS'],
        'of RANKD_* the rank has only its job id and attempt',
      );
    });
  }
});
