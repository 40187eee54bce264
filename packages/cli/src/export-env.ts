// `rankd run --export`: which of the submitter's variables the ranks get, as srun's
// --export decides it. ALL (the default) is the whole environment; NONE is nothing;
// `VAR,VAR=value,…` is those names alone (a name the shell does not set is left out) and
// the values given; `ALL,VAR=value,…` is everything, with the values given for names the
// shell does not set (srun: the caller's environment takes precedence).
//
// Never taken from the submitter, whatever the mode (docs/ranks.md "The environment"):
// rankd's own RANKD_* (the token above all), SLURM_* and PMI wire-up (export-env.ts in
// the protocol), and HOME, USER, LOGNAME and SHELL, which each node sets for the user the
// rank runs as.
import { IDENTITY_VARIABLES, notExportedBecause } from '@rankd/protocol/export-env';
import { CliError, ExitCode } from './exit-codes.js';

const IDENTITY = new Set(IDENTITY_VARIABLES);
/** A name the ranks can be given: anything without "=", as execve takes it (bash's exported functions are BASH_FUNC_name%%). */
const NAME = /^[^=]{1,256}$/;

/** The variables `spec` (the --export value, ALL when absent) exports from `source`. */
export function exportedEnv(spec: string | undefined, source: NodeJS.ProcessEnv): Record<string, string> {
  const items = (spec ?? 'ALL').split(',').map((s) => s.trim());
  if (items.some((s) => s === '')) throw usage(`--export has an empty item: "${spec}"`);
  const [first, ...rest] = items;
  if (first === 'NONE') {
    // srun: "User can not specify explicit environment variables with NONE"
    if (rest.length > 0)
      throw usage(`--export NONE takes no variables ("${spec}"); name them without NONE: --export ${rest.join(',')}`);
    return {};
  }
  const all = first === 'ALL';
  const out: Record<string, string> = all ? allOf(source) : {};
  for (const item of all ? rest : items) {
    if (item === 'ALL' || item === 'NONE') throw usage(`--export ${item} comes first or alone, not in "${spec}"`);
    const eq = item.indexOf('=');
    const name = eq < 0 ? item : item.slice(0, eq);
    checkName(name);
    if (eq >= 0) {
      if (!(all && name in out)) out[name] = item.slice(eq + 1);
    } else if (source[name] !== undefined) {
      out[name] = source[name]!;
    }
  }
  return out;
}

function allOf(source: NodeJS.ProcessEnv): Record<string, string> {
  const out: Record<string, string> = {};
  for (const [name, value] of Object.entries(source)) {
    if (value === undefined || !NAME.test(name) || IDENTITY.has(name) || notExportedBecause(name)) continue;
    out[name] = value;
  }
  return out;
}

function checkName(name: string): void {
  if (!NAME.test(name)) throw usage(`--export takes variable names (VAR or VAR=value), not "${name}"`);
  if (IDENTITY.has(name))
    throw usage(
      `--export ${name}: each rank gets ${IDENTITY_VARIABLES.join(', ')} of the Unix user it runs as, from its node`,
    );
  const why = notExportedBecause(name);
  if (why) throw usage(`--export ${name}: rankd never passes it from your environment to ranks, because ${why}`);
}

function usage(message: string): CliError {
  return new CliError(message, ExitCode.Usage);
}
