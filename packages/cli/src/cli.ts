// rankd: the one command people type. Each subcommand lives in commands/<name>.ts
// and registers itself; this file only wires them and maps errors to exit codes.
// main.ts runs it from the bundle `npm run build` makes of it (or, with RANKD_DEV=1, compiled).
import { Command, CommanderError } from 'commander';
import { RANKD_VERSION } from '@rankd/protocol/version';
import { CliError, ExitCode } from './exit-codes.js';
import { modulesFor } from './commands/index.js';
import { nameFlagsInRefusals } from './options.js';
import { watchStdout } from './closed-stdout.js';
import { suggestedCommand } from './suggested-command.js';
import type { PlacementSpec } from '@rankd/protocol';

watchStdout();

const program = new Command('rankd')
  .description('pinned distributed ranks on RDMA clusters')
  .version(RANKD_VERSION, '-V, --version')
  // rankd's own options come before the command, so that a command may hand every word
  // after its program to that program (program-argv.ts)
  .enablePositionalOptions()
  .exitOverride()
  .configureOutput({ writeErr: (s) => process.stderr.write(s) });

for (const module of await Promise.all(modulesFor(process.argv.slice(2)).map((m) => m.load())))
  module.register(program);
nameFlagsInRefusals(program);

try {
  await program.parseAsync(process.argv);
} catch (err) {
  if (err instanceof CommanderError) {
    // help and version are "errors" to commander; their text is already printed
    process.exitCode = err.exitCode === 0 ? ExitCode.Ok : ExitCode.Usage;
  } else if (err instanceof CliError) {
    process.stderr.write(`rankd: ${err.message}\n`);
    if (err.suggestion) printSuggestion(err.suggestion);
    process.exitCode = err.exitCode;
  } else {
    process.stderr.write(`rankd: internal error: ${(err as Error).stack ?? String(err)}\n`);
    process.exitCode = ExitCode.Software;
  }
}

/** The nearest feasible spec as the user's own command with the changed flags, ready to paste. */
function printSuggestion(suggestion: Partial<PlacementSpec>): void {
  const [name, ...args] = process.argv.slice(2);
  const cmd = program.commands.find((c) => c.name() === name);
  if (cmd) process.stderr.write(`rankd: try: ${suggestedCommand(cmd, args, suggestion)}\n`);
}
