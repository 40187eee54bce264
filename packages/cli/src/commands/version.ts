import type { Command } from 'commander';
import { RANKD_VERSION, SUBPROTOCOL } from '@rankd/protocol';

export function register(program: Command): void {
  program
    .command('version')
    .description('print the rankd version and protocol')
    .action(() => {
      process.stdout.write(`rankd ${RANKD_VERSION} (protocol ${SUBPROTOCOL}, node ${process.version})\n`);
    });
}
