// Finding rankd's own side of a figure. Features land one by one, so a figure asks
// whether the command or module it needs exists and, if not, says so in RESULTS.md
// instead of measuring something else.
import { execFile } from 'node:child_process';
import { existsSync } from 'node:fs';
import path from 'node:path';
import { promisify } from 'node:util';

const run = promisify(execFile);

export function rankdCli(repoRoot: string): string {
  return path.join(repoRoot, 'packages/cli/dist/main.js');
}

/** argv that runs the built CLI the way the `rankd` bin does. */
export function rankdArgv(repoRoot: string, args: readonly string[]): string[] {
  return [process.execPath, rankdCli(repoRoot), ...args];
}

const commandCache = new Map<string, Set<string>>();

/** Subcommands the built CLI lists in its help: the user-visible truth of what exists. */
export async function rankdCommands(repoRoot: string): Promise<Set<string>> {
  const cached = commandCache.get(repoRoot);
  if (cached) return cached;
  const names = new Set<string>();
  if (existsSync(rankdCli(repoRoot))) {
    try {
      const { stdout } = await run(process.execPath, [rankdCli(repoRoot), '--help'], { timeout: 15_000 });
      const section = stdout.split(/^Commands:\s*$/m)[1] ?? '';
      for (const line of section.split('\n')) {
        const m = /^ {2}([a-z][\w-]*)/.exec(line);
        if (m?.[1]) names.add(m[1]);
      }
    } catch {
      // a CLI that cannot print its help has no commands we can measure
    }
  }
  commandCache.set(repoRoot, names);
  return names;
}

/** null when the command exists, else the reason to print in place of a number. */
export async function missingCommand(repoRoot: string, command: string): Promise<string | null> {
  if (!existsSync(rankdCli(repoRoot))) return 'the CLI is not built (run `npx tsc -b`)';
  return (await rankdCommands(repoRoot)).has(command) ? null : `\`rankd ${command}\` does not exist yet`;
}

export type Loaded<T> = { ok: true; module: T } | { ok: false; why: string };

/**
 * Imports a built module by package specifier at run time. The specifier is a variable on
 * purpose: the bench must compile before the module it measures exists.
 */
export async function importOptional<T>(specifier: string, exportName: string): Promise<Loaded<T>> {
  try {
    const mod = (await import(specifier)) as Record<string, unknown>;
    if (typeof mod[exportName] !== 'function') return { ok: false, why: `${specifier} has no ${exportName}() yet` };
    return { ok: true, module: mod as T };
  } catch (err) {
    const e = err as NodeJS.ErrnoException;
    if (e.code === 'ERR_MODULE_NOT_FOUND' || e.code === 'ERR_PACKAGE_PATH_NOT_EXPORTED') {
      return { ok: false, why: `${specifier} does not exist yet` };
    }
    return { ok: false, why: `${specifier} failed to load: ${e.message.split('\n')[0]}` };
  }
}
