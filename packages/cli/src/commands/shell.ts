// `rankd shell NODE [-- CMD ARGS…]`: an interactive terminal on a node, as `kubectl exec
// -it` gives one: a PTY there (the user's login shell unless a command is given), this
// terminal in raw mode here, window size changes passed on, and the remote exit code as
// ours. A lost connection ends the remote program; we then exit 69.
import { constants } from 'node:os';
import type { Command } from 'commander';
import type { ShellEvent } from '@rankd/protocol';
import { SHELL_PATH, SHELL_SUBPROTOCOL } from '@rankd/protocol/shell-path';
import { ErrorCode, FleetErrorCode } from '@rankd/protocol/errors';
import { MAX_FRAME_BYTES } from '@rankd/protocol/wire';
import { loadClientConfig, type ClientConfig } from '../client/config.js';
import { readCa, reachError } from '../client/http.js';
import { readUpgradeRefusal } from '../client/upgrade-refusal.js';
import { CliError, ExitCode } from '../exit-codes.js';
import { programAfterOperands } from '../program-argv.js';

interface ShellFlags {
  user?: string;
  cwd?: string;
}

/** Signals this process forwards to the remote session when the terminal is not raw (Ctrl-C from a pipe, kill). */
const FORWARDED: NodeJS.Signals[] = ['SIGINT', 'SIGQUIT', 'SIGTERM'];

export function register(program: Command): void {
  const cmd = program
    .command('shell')
    .description('open an interactive terminal on a node (like kubectl exec -it); exits with the remote exit code')
    .usage('[options] NODE [options] [[--] CMD [ARGS…]]')
    .argument('<node>', 'the node')
    .argument(
      '[command...]',
      'run this instead of the login shell: every word from the first one after NODE that is not an option (or after --)',
    )
    .option('--user <name>', 'run as this user')
    .option('--cwd <dir>', "start in this directory (default: the user's home)");
  programAfterOperands(cmd, 1).action(async (node: string, command: string[], flags: ShellFlags) => {
    process.exitCode = await openShell(loadClientConfig(), node, command, flags);
  });
}

async function openShell(config: ClientConfig, node: string, command: string[], flags: ShellFlags): Promise<number> {
  // ws is loaded here: no other command pays for it
  const { default: WebSocket } = await import('ws');
  const stdin = process.stdin;
  const stdout = process.stdout;
  const params = new URLSearchParams({
    node,
    cols: String(stdout.isTTY ? stdout.columns : 80),
    rows: String(stdout.isTTY ? stdout.rows : 24),
    term: process.env['TERM'] || 'xterm-256color',
  });
  for (const arg of command) params.append('arg', arg);
  if (flags.user) params.set('user', flags.user);
  if (flags.cwd) params.set('cwd', flags.cwd);
  const url = config.url.replace(/^http/, 'ws') + SHELL_PATH + '?' + params.toString();
  const ca = readCa(config);
  const ws = new WebSocket(url, [SHELL_SUBPROTOCOL], {
    ...(ca ? { ca } : {}),
    headers: { authorization: `Bearer ${config.token}` },
    perMessageDeflate: false,
    maxPayload: MAX_FRAME_BYTES,
    handshakeTimeout: 15_000,
  });

  return new Promise<number>((resolve, reject) => {
    let last: ShellEvent | null = null;
    let raw = false;
    let opened = false;
    const cleanups: Array<() => void> = [];

    const restore = () => {
      for (const c of cleanups.splice(0)) c();
      if (raw) stdin.setRawMode(false);
      raw = false;
      stdin.pause();
    };

    ws.on('unexpected-response', (_req, res) =>
      readUpgradeRefusal(res, (message, status) => {
        const code =
          status === 401
            ? ExitCode.Unauthorized
            : status === 503
              ? ExitCode.Unreachable
              : status === 400
                ? ExitCode.Usage
                : ExitCode.RemoteFailure;
        reject(new CliError(status === 401 ? `not authorized: ${message}` : message, code));
      }),
    );
    ws.on('error', (err: NodeJS.ErrnoException) => {
      if (!opened) reject(reachError(config, err));
    });

    ws.on('open', () => {
      opened = true;
      if (stdin.isTTY) {
        stdin.setRawMode(true);
        raw = true;
      }
      const onInput = (d: Buffer) => ws.send(d, { binary: true });
      let lastByte = 0x0a;
      const onData = (d: Buffer) => {
        if (d.length > 0) lastByte = d[d.length - 1]!;
        onInput(d);
      };
      // a piped stdin ends: the terminal's EOF is ^D at the start of a line
      const onEnd = () => ws.send(Buffer.from(lastByte === 0x0a ? '\x04' : '\x04\x04'), { binary: true });
      stdin.on('data', onData);
      stdin.once('end', onEnd);
      stdin.resume();
      cleanups.push(() => {
        stdin.off('data', onData);
        stdin.off('end', onEnd);
      });
      if (stdout.isTTY) {
        const onResize = () => ws.send(JSON.stringify({ type: 'resize', cols: stdout.columns, rows: stdout.rows }));
        stdout.on('resize', onResize);
        cleanups.push(() => stdout.off('resize', onResize));
      }
      for (const signal of FORWARDED) {
        const forward = () => ws.send(JSON.stringify({ type: 'signal', signal }));
        process.on(signal, forward);
        cleanups.push(() => process.off(signal, forward));
      }
      // a hangup here is a lost connection there: close, and the remote session is hung up
      const hangup = () => ws.close(1000, 'client hung up');
      process.on('SIGHUP', hangup);
      cleanups.push(() => process.off('SIGHUP', hangup));
    });

    let waitingForDrain = false;
    ws.on('message', (data: Buffer, isBinary: boolean) => {
      if (isBinary) {
        // a slow terminal slows the remote program down instead of buffering here
        if (!stdout.write(data) && !waitingForDrain) {
          waitingForDrain = true;
          ws.pause();
          stdout.once('drain', () => {
            waitingForDrain = false;
            ws.resume();
          });
        }
        return;
      }
      try {
        last = JSON.parse(data.toString('utf8')) as ShellEvent;
      } catch {
        return;
      }
      if (last.type === 'error') process.stderr.write(`\r\nrankd: ${last.message} (${last.code})\r\n`);
    });

    ws.on('close', () => {
      restore();
      if (!opened) return;
      if (last?.type === 'exit') {
        const signal = last.signal as keyof typeof constants.signals | null;
        resolve(
          last.code ?? (signal && constants.signals[signal] ? 128 + constants.signals[signal] : ExitCode.RemoteFailure),
        );
      } else if (last?.type === 'error') {
        resolve(
          last.code === FleetErrorCode.AgentUnreachable
            ? ExitCode.Unreachable
            : last.code === ErrorCode.CredentialRevoked
              ? ExitCode.Unauthorized
              : ExitCode.RemoteFailure,
        );
      } else {
        process.stderr.write('\r\nrankd: the connection to the controller was lost; the remote program is ended\r\n');
        resolve(ExitCode.Unreachable);
      }
    });
  });
}
