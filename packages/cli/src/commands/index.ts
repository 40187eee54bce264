// Every subcommand, in the order `rankd --help` lists them.
import type { Command } from 'commander';
import { register as agent } from './agent.js';
import { register as controller } from './controller.js';
import { register as nodes } from './nodes.js';
import { register as up } from './up.js';
import { register as version } from './version.js';

export const commands: ReadonlyArray<(program: Command) => void> = [up, nodes, controller, agent, version];
