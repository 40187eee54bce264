// The orted of an `--mpi openmpi` job, as typed fields instead of a command line
// (docs/mpi-openmpi.md, docs/security.md "Agent messages").
//
// Open MPI 4.1's mpirun asks its remote shell to run, on each host,
//   orted -mca orte_leave_session_attached "1" -mca ess "env" -mca ess_base_jobid "J"
//     -mca ess_base_vpid V -mca ess_base_num_procs "N" -mca orte_node_regex "R"
//     -mca orte_hnp_uri "J.0;tcp://ADDR:PORT;…" --mca plm_rsh_agent "…" … -mca KEY "VALUE" …
// (values quoted for a shell). Of all that, only five values are the launch's own: the job
// family (ess_base_jobid), the daemon's vpid, the number of daemons, the node regex and
// the address of mpirun (the HNP). The launcher node parses those out; the controller
// checks them against this grammar and the job, and builds the orted's arguments from them
// and from job state an authorized user submitted (the job's OMPI_MCA_* variables). The
// target agent rebuilds the same arguments from its own record of the job and runs
// `orted` found on its own PATH with them: no shell anywhere, and nothing a node wrote
// becomes a program, an option name, or shell text on another node.
import Type from 'typebox';
import { Value } from 'typebox/value';

const IPV4 = '(?:[0-9]{1,3}\\.){3}[0-9]{1,3}';
const IPV6 = '[0-9A-Fa-f:.]{2,45}';
const PORT = '[0-9]{1,5}';
/** `J.0;tcp://ADDR:PORT[;tcp6://[ADDR]:PORT]…`: mpirun's own process name and its listening addresses. */
const HNP_URI = `^[0-9]{1,10}\\.0(?:;tcp://${IPV4}:${PORT}|;tcp6://\\[${IPV6}\\]:${PORT}){1,16}$`;

export const OrtedLaunch = Type.Object(
  {
    /** Open MPI's job family of mpirun's job (ess_base_jobid). */
    jobFamily: Type.String({ pattern: '^[0-9]{1,10}$' }),
    /** The daemon's number among mpirun's daemons; mpirun itself is 0 (ess_base_vpid). */
    vpid: Type.Integer({ minimum: 1, maximum: 65536 }),
    /** Daemons, mpirun included (ess_base_num_procs). */
    numProcs: Type.Integer({ minimum: 2, maximum: 65537 }),
    /** Open MPI's compressed list of the job's host names (orte_node_regex). */
    nodeRegex: Type.String({ minLength: 1, maxLength: 4096, pattern: '^[A-Za-z0-9._,:@()\\[\\]-]+$' }),
    /** Where the daemon reaches mpirun (orte_hnp_uri). */
    hnpUri: Type.String({ maxLength: 1024, pattern: HNP_URI }),
  },
  { additionalProperties: false },
);
export type OrtedLaunch = Type.Static<typeof OrtedLaunch>;

/** The MCA parameters rankd always gives an orted (mpirun gives them too; docs/mpi-openmpi.md). */
const FIXED_MCA: ReadonlyArray<readonly [string, string]> = [
  ['orte_leave_session_attached', '1'],
  ['ess', 'env'],
  ['plm', 'rsh'],
  ['plm_rsh_no_tree_spawn', '1'],
  ['rmaps', 'seq'],
  ['hwloc_base_binding_policy', 'none'],
  ['pmix', '^s1,s2,cray,isolated'],
];
const LAUNCH_MCA: Record<string, keyof OrtedLaunch> = {
  ess_base_jobid: 'jobFamily',
  ess_base_vpid: 'vpid',
  ess_base_num_procs: 'numProcs',
  orte_node_regex: 'nodeRegex',
  orte_hnp_uri: 'hnpUri',
};
const RESERVED = new Set([...FIXED_MCA.map(([k]) => k), ...Object.keys(LAUNCH_MCA), 'plm_rsh_agent']);
const MCA_KEY = /^[a-z0-9_]{1,128}$/;

export class OrtedLaunchError extends Error {
  override readonly name = 'OrtedLaunchError';
}

/**
 * The launcher node's side: the five values of the launch, out of the arguments mpirun gave
 * its remote shell (after the host). Throws on anything that is not an orted launch as
 * Open MPI 4.1 makes one: another program, a stray word, a launch value given twice or missing.
 */
export function parseOrtedRequest(args: readonly string[]): OrtedLaunch {
  const words = args.map((a) => a.trim()).filter((a) => a !== '');
  if (!isOrtedProgram(words[0] ?? ''))
    throw new OrtedLaunchError(`not an orted launch: starts with ${JSON.stringify((words[0] ?? '').slice(0, 64))}`);
  const found: Record<string, string | number> = {};
  for (let i = 1; i < words.length; i += 3) {
    const [flag, key, quoted] = [words[i], words[i + 1], words[i + 2]];
    if ((flag !== '-mca' && flag !== '--mca') || key === undefined || quoted === undefined)
      throw new OrtedLaunchError(`unexpected orted argument ${JSON.stringify(flag?.slice(0, 64))}`);
    const field = LAUNCH_MCA[key];
    if (!field) continue; // rebuilt from the job's own settings (ortedArgs)
    if (field in found) throw new OrtedLaunchError(`${key} given twice`);
    const value = unquote(quoted);
    found[field] =
      field === 'vpid' || field === 'numProcs' ? (/^[0-9]{1,6}$/.test(value) ? Number(value) : NaN) : value;
  }
  return checkOrtedLaunch(found);
}

/**
 * mpirun's program word: `orted`, or, when mpirun was started by its path, the prefix's
 * search paths then that prefix's orted (`PATH=/usr/bin:$PATH ; export PATH ; … ; /usr/bin/orted`).
 * None of it is used: the target node runs its own orted in its own environment.
 */
function isOrtedProgram(word: string): boolean {
  const parts = word.split(';').map((p) => p.trim());
  const program = parts.pop()!;
  const prelude = /^(?:export )?(?:PATH|LD_LIBRARY_PATH|DYLD_LIBRARY_PATH)(?:=[A-Za-z0-9_./:${}-]*)?$/;
  return /^(?:\/[A-Za-z0-9._/-]*\/)?orted$/.test(program) && parts.every((p) => prelude.test(p));
}

/** The grammar: exactly the five fields, each matching its pattern, the HNP's job family the launch's. Throws OrtedLaunchError. */
export function checkOrtedLaunch(value: unknown): OrtedLaunch {
  if (!Value.Check(OrtedLaunch, value)) {
    const first = [...Value.Errors(OrtedLaunch, value)][0];
    throw new OrtedLaunchError(
      `bad orted launch: ${first ? `${first.instancePath || '/'} ${first.message}` : 'malformed'}`,
    );
  }
  if (value.vpid >= value.numProcs)
    throw new OrtedLaunchError(`vpid ${value.vpid} is not below the number of daemons ${value.numProcs}`);
  if (!value.hnpUri.startsWith(`${value.jobFamily}.0;`))
    throw new OrtedLaunchError(`the HNP URI is not of job family ${value.jobFamily}`);
  return value;
}

/** The addresses (without ports) the HNP URI names. */
export function hnpAddresses(hnpUri: string): string[] {
  return hnpUri
    .split(';')
    .slice(1)
    .map((u) => /^tcp6?:\/\/\[?([^\]]+?)\]?:[0-9]+$/.exec(u)?.[1] ?? '');
}

/** The job's own MCA parameters: its OMPI_MCA_* variables, as mpirun would forward them, minus those rankd fixes. */
export function jobMca(env: Readonly<Record<string, string>>): Array<[string, string]> {
  const out: Array<[string, string]> = [];
  for (const [name, value] of Object.entries(env)) {
    const key = name.startsWith('OMPI_MCA_') ? name.slice('OMPI_MCA_'.length) : null;
    if (key && MCA_KEY.test(key) && !RESERVED.has(key)) out.push([key, value]);
  }
  return out.sort(([a], [b]) => (a < b ? -1 : a > b ? 1 : 0));
}

/** The orted's arguments (its program is the node's own `orted`): the fixed settings, the launch, the job's MCA parameters. */
export function ortedArgs(launch: OrtedLaunch, env: Readonly<Record<string, string>>): string[] {
  const pairs: Array<readonly [string, string]> = [
    ...FIXED_MCA,
    ...Object.entries(LAUNCH_MCA).map(([key, field]) => [key, String(launch[field])] as const),
    ...jobMca(env),
  ];
  return pairs.flatMap(([key, value]) => ['-mca', key, value]);
}

/**
 * The target agent's side: the launch these arguments carry, when they are exactly what
 * ortedArgs makes of it with this node's record of the job's environment; throws otherwise.
 */
export function checkOrtedArgs(args: readonly string[], env: Readonly<Record<string, string>>): OrtedLaunch {
  const found: Record<string, string | number> = {};
  for (let i = 0; i + 2 < args.length; i += 3) {
    const field = args[i] === '-mca' ? LAUNCH_MCA[args[i + 1]!] : undefined;
    if (field) found[field] = field === 'vpid' || field === 'numProcs' ? Number(args[i + 2]) : args[i + 2]!;
  }
  const launch = checkOrtedLaunch(found);
  const expected = ortedArgs(launch, env);
  const differs = expected.findIndex((a, i) => a !== args[i]);
  if (differs >= 0 || expected.length !== args.length) {
    const at = differs >= 0 ? differs : Math.min(expected.length, args.length);
    const shown = (a: string | undefined) => (a === undefined ? 'missing' : JSON.stringify(a.slice(0, 64)));
    throw new OrtedLaunchError(
      `the orted arguments are not those of this job: argument ${at} is ${shown(args[at])}, this node's record of the job makes it ${shown(expected[at])}`,
    );
  }
  return launch;
}

/** mpirun quotes each value for a remote shell: `"1"`. */
function unquote(s: string): string {
  return s.length >= 2 && s.startsWith('"') && s.endsWith('"') ? s.slice(1, -1) : s;
}
