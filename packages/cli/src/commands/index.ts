// Every subcommand module, in the order `rankd --help` lists them, with the command
// names each defines. Modules load lazily: `rankd run` must not pay for fastify,
// SQLite, the facts readers or the planner, so only the module of the command being
// run is imported (all of them only for --help or an unknown command).
import type { Command } from 'commander';

export interface CommandModule {
  readonly names: readonly string[];
  readonly load: () => Promise<{ register(program: Command): void }>;
}

export const commandModules: readonly CommandModule[] = [
  { names: ['up'], load: () => import('./up.js') },
  { names: ['down'], load: () => import('./down.js') },
  { names: ['run'], load: () => import('./run.js') },
  { names: ['plan'], load: () => import('./plan.js') },
  { names: ['jobs', 'job', 'cancel'], load: () => import('./jobs.js') },
  { names: ['queue'], load: () => import('./queue.js') },
  { names: ['logs'], load: () => import('./logs.js') },
  { names: ['nodes', 'node'], load: () => import('./nodes.js') },
  { names: ['facts'], load: () => import('./facts.js') },
  { names: ['inventory'], load: () => import('./inventory.js') },
  { names: ['exec'], load: () => import('./exec.js') },
  { names: ['ping'], load: () => import('./ping.js') },
  { names: ['shell'], load: () => import('./shell.js') },
  { names: ['doctor'], load: () => import('./doctor.js') },
  { names: ['check'], load: () => import('./check.js') },
  { names: ['dashboard'], load: () => import('./dashboard.js') },
  { names: ['join-command', 'join-token'], load: () => import('./enroll.js') },
  { names: ['user', 'token'], load: () => import('./users.js') },
  { names: ['whoami'], load: () => import('./whoami.js') },
  { names: ['audit'], load: () => import('./audit.js') },
  { names: ['controller'], load: () => import('./controller.js') },
  { names: ['agent'], load: () => import('./agent.js') },
  { names: ['version'], load: () => import('./version.js') },
];

/** The modules needed for this command line: the named command's, or all of them. */
export function modulesFor(argv: readonly string[]): readonly CommandModule[] {
  const name = argv.find((a) => !a.startsWith('-'));
  const match = name === undefined ? undefined : commandModules.find((m) => m.names.includes(name));
  return match ? [match] : commandModules;
}
