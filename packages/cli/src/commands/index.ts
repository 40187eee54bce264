// Every subcommand, in the order `rankd --help` lists them.
import type { Command } from 'commander';
import { register as version } from './version.js';

export const commands: ReadonlyArray<(program: Command) => void> = [version];
