// Commands that run a program (run, exec, shell) read their own options only up to the
// program's name, as srun, mpirun, docker run and ssh do: the first word that is not an
// option or an option's value, after the command's own operands (exec's pattern, shell's
// node), is the program, and it and every word after it are its argv, untouched
// (`rankd run -n 2 python3 -c 'print(42)'`). `--` still ends rankd's options explicitly.
import type { Command } from 'commander';

/**
 * Makes `cmd` stop reading options at the program: the first operand after `leading` operands
 * of its own. Options may still come before, between and after those leading operands.
 * commander's passThroughOptions() does this for leading = 0; for more, each leading operand
 * is taken and the rest parsed again, by commander itself, so that an option's value given
 * as a separate word (`-n 2`, `--label-format '{rank}: '`) is consumed as that option's value.
 */
export function programAfterOperands(cmd: Command, leading: number): Command {
  cmd.passThroughOptions();
  if (leading === 0) return cmd;
  const parseOnce = cmd.parseOptions.bind(cmd);
  cmd.parseOptions = (args: string[]) => {
    const taken: string[] = [];
    let rest = args;
    for (;;) {
      const parsed = parseOnce(rest);
      // passThroughOptions leaves the operands as a suffix of what it was given: the first
      // operand, then every word after it verbatim (or every word after a `--`)
      const operandsAt = rest.length - parsed.operands.length;
      const afterDashDash = operandsAt > 0 && rest[operandsAt - 1] === '--';
      if (taken.length === leading || parsed.unknown.length > 0 || parsed.operands.length === 0 || afterDashDash) {
        return { operands: [...taken, ...parsed.operands], unknown: parsed.unknown };
      }
      taken.push(parsed.operands[0]!);
      rest = parsed.operands.slice(1);
    }
  };
  return cmd;
}
