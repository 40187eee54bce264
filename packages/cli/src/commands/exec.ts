// `rankd exec PATTERN -- CMD ARGS…`: an ad-hoc command on every host a pattern selects,
// in parallel, reported as Ansible does (`host | SUCCESS | rc=0 >>` and the output).
// Exits 0 when every host succeeded; like ansible, 4 when a host was unreachable and
// otherwise 2 when a host failed; 77 when its token was revoked while it ran.
import type { Command } from 'commander';
import type { ExecHostResult, ExecRequest } from '@rankd/protocol';
import { FleetErrorCode } from '@rankd/protocol/errors';
import { EXEC_OUTPUT_BYTES, EXEC_TIMEOUT_SECONDS } from '@rankd/protocol/limits';
import { loadClientConfig } from '../client/config.js';
import { call } from '../client/rest.js';
import { CliError, ExitCode } from '../exit-codes.js';
import { collect, integerIn, secondsIn } from '../options.js';
import { programAfterOperands } from '../program-argv.js';

/** ansible's codes: RUN_FAILED_HOSTS and RUN_UNREACHABLE_HOSTS. */
export const EXEC_FAILED_HOSTS = 2;
export const EXEC_UNREACHABLE_HOSTS = 4;

interface ExecFlags {
  shell?: string;
  /** Seconds. */
  timeout?: number;
  json?: boolean;
  user?: string;
  cwd?: string;
  env?: string[];
  maxOutput?: number;
}

export function register(program: Command): void {
  const cmd = program
    .command('exec')
    .description('run a command on every host a pattern selects, in parallel (like ansible -m command)')
    .usage('[options] PATTERN [options] [--] CMD [ARGS…]  |  PATTERN --shell STRING')
    .argument('<pattern>', 'hosts: all, group, host*, g1:g2, g1:&g2, g1:!g2, key=value')
    .argument(
      '[command...]',
      'the program and its arguments: every word from the first one after PATTERN that is not an option (or after --)',
    )
    .option('--shell <string>', 'run a shell string with /bin/sh -c instead (an explicit opt-in)')
    .option(
      '--timeout <time>',
      `end the command on a host after this long: seconds or a duration (default 300, at most ${EXEC_TIMEOUT_SECONDS.max})`,
      secondsIn(EXEC_TIMEOUT_SECONDS),
    )
    .option('--user <name>', 'run as this user')
    .option('--cwd <dir>', "working directory (default: the user's home)")
    .option('--env <K=V>', 'environment variable (repeatable)', collect)
    .option(
      '--max-output <bytes>',
      `output kept per stream and host (default 65536, at most ${EXEC_OUTPUT_BYTES.max})`,
      integerIn(EXEC_OUTPUT_BYTES),
    )
    .option('--json', 'print the report as JSON');
  programAfterOperands(cmd, 1).action(async (pattern: string, command: string[], flags: ExecFlags) => {
    if (command.length > 0 && flags.shell !== undefined)
      throw new CliError('give a command or --shell, not both', ExitCode.Usage);
    if (command.length === 0 && flags.shell === undefined)
      throw new CliError('nothing to run: give a command after the pattern (or --shell STRING)', ExitCode.Usage);
    const timeout = flags.timeout;
    const body: ExecRequest = {
      pattern,
      ...(command.length > 0 ? { command } : { shell: flags.shell! }),
      ...(timeout !== undefined ? { timeout } : {}),
      ...(flags.user ? { user: flags.user } : {}),
      ...(flags.cwd ? { cwd: flags.cwd } : {}),
      ...(flags.env ? { env: envVars(flags.env) } : {}),
      ...(flags.maxOutput !== undefined ? { maxOutputBytes: flags.maxOutput } : {}),
    };
    const timeoutMs = ((timeout ?? 300) + 30) * 1000;
    const report = await call(loadClientConfig(), 'POST /v1/exec', { body, timeoutMs });
    if (flags.json) process.stdout.write(JSON.stringify(report, null, 2) + '\n');
    else process.stdout.write(report.hosts.map(renderHost).join(''));
    if (report.hosts.length === 0) process.stderr.write(`rankd: no hosts matched "${pattern}"\n`);
    const { success, failed, unreachable } = report.summary;
    if (failed + unreachable > 0 && !flags.json)
      process.stderr.write(`rankd: ${success} succeeded, ${failed} failed, ${unreachable} unreachable\n`);
    if (report.revoked) {
      // the credential is gone: what the hosts did matters less than that nothing more will run
      process.stderr.write(
        `rankd: ${report.revoked.code}: ${report.revoked.message}; the commands still running were ended\n`,
      );
      process.exitCode = ExitCode.Unauthorized;
      return;
    }
    process.exitCode = unreachable > 0 ? EXEC_UNREACHABLE_HOSTS : failed > 0 ? EXEC_FAILED_HOSTS : ExitCode.Ok;
  });
}

export function renderHost(h: ExecHostResult): string {
  if (h.status === 'UNREACHABLE' || (h.rc === null && h.signal === null && h.error)) {
    return `${h.host}${h.node && h.node !== h.host ? ` (${h.node})` : ''} | ${h.status} | ${h.error?.message ?? 'no result'}\n`;
  }
  const fields = [h.host, h.status, h.rc !== null ? `rc=${h.rc}` : `signal=${h.signal}`];
  if (h.timedOut) fields.push('timed out');
  if (h.durationMs !== null) fields.push(`${h.durationMs} ms`);
  let out = `${fields.join(' | ')} >>\n`;
  // a command that never ran (rc 127 or 126, as a shell gives it) has only its reason to show
  if (h.error?.code === FleetErrorCode.ExecSpawn) out += `${h.error.message}\n`;
  out += withNewline(h.stdout);
  if (h.truncated.stdout) out += `[rankd: stdout truncated; it was ${h.stdoutBytes} bytes]\n`;
  out += withNewline(h.stderr);
  if (h.truncated.stderr) out += `[rankd: stderr truncated; it was ${h.stderrBytes} bytes]\n`;
  return out;
}

function withNewline(text: string): string {
  return text === '' || text.endsWith('\n') ? text : text + '\n';
}

function envVars(pairs: readonly string[]): Record<string, string> {
  const env: Record<string, string> = {};
  for (const pair of pairs) {
    const eq = pair.indexOf('=');
    if (eq <= 0 || !/^[A-Za-z_][A-Za-z0-9_]*$/.test(pair.slice(0, eq)))
      throw new CliError(`--env takes NAME=VALUE, not "${pair}"`, ExitCode.Usage);
    env[pair.slice(0, eq)] = pair.slice(eq + 1);
  }
  return env;
}
