import type { Command } from 'commander';
import { RANKD_VERSION } from '@rankd/protocol/version';
import { SUBPROTOCOL } from '@rankd/protocol/wire';

export function register(program: Command): void {
  program
    .command('version')
    .description('print the rankd version and protocol')
    .action(() => {
      process.stdout.write(`rankd ${RANKD_VERSION} (protocol ${SUBPROTOCOL}, node ${process.version})\n`);
    });
}
