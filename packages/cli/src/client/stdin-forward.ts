// `rankd run`'s stdin, forwarded to the job's ranks that read it (srun --input): the bytes
// go, unread, over the job's stdin WebSocket (STDIN_PATH), and this stdin's end is theirs.
//
// Backpressure: at most STDIN_WINDOW_BYTES are sent and not yet acknowledged by the
// controller; past that, reading stops until an `ack` gives window back. So `cat bigfile |
// rankd run …` reads the file only as fast as the ranks do. When no rank takes more (they
// closed their stdin or ended), reading stops quietly: that is no error of the user's.
import { fstatSync, statSync } from 'node:fs';
import { STDIN_PATH, STDIN_SUBPROTOCOL, STDIN_WINDOW_BYTES, type StdinEvent } from '@rankd/protocol/stdin-path';
import type { ClientConfig } from './config.js';
import { readCa } from './http.js';
import { readUpgradeRefusal } from './upgrade-refusal.js';

/** Largest frame sent: a pipe's chunks are 64 KiB already. */
const FRAME_BYTES = 64 * 1024;

export interface StdinForward {
  /** Stops reading and closes the socket: each reading rank gets EOF after what was sent. */
  stop(): void;
}

/** True when there is nothing to forward: stdin is closed or /dev/null (the ranks read EOF at once, as without rankd). */
export function stdinIsEmpty(): boolean {
  let st;
  try {
    st = fstatSync(0);
  } catch {
    return true;
  }
  if (!st.isCharacterDevice()) return false;
  try {
    return st.rdev === statSync('/dev/null').rdev;
  } catch {
    return false;
  }
}

export async function forwardStdin(config: ClientConfig, jobId: string): Promise<StdinForward> {
  // ws is loaded here: a run without stdin does not pay for it
  const { default: WebSocket } = await import('ws');
  const stdin = process.stdin;
  const ca = readCa(config);
  const url = config.url.replace(/^http/, 'ws') + STDIN_PATH + '?' + new URLSearchParams({ job: jobId }).toString();
  const ws = new WebSocket(url, [STDIN_SUBPROTOCOL], {
    ...(ca ? { ca } : {}),
    headers: { authorization: `Bearer ${config.token}` },
    perMessageDeflate: false,
    maxPayload: 64 * 1024,
    handshakeTimeout: 15_000,
  });
  let outstanding = 0;
  let reading = false;
  let stopped = false;

  const onData = (chunk: Buffer) => {
    for (let at = 0; at < chunk.length; at += FRAME_BYTES)
      ws.send(chunk.subarray(at, at + FRAME_BYTES), { binary: true });
    outstanding += chunk.length;
    if (outstanding >= STDIN_WINDOW_BYTES) stdin.pause();
  };
  // our EOF is theirs: closing the socket ends the stdin after the bytes before it
  const onEnd = () => {
    stopReading();
    ws.close(1000, 'eof');
  };
  const onError = (err: Error) => {
    process.stderr.write(`rankd: cannot read stdin: ${err.message}; the job's stdin ends here\n`);
    onEnd();
  };
  function stopReading(): void {
    if (!reading && stopped) return;
    reading = false;
    stopped = true;
    stdin.off('data', onData);
    stdin.off('end', onEnd);
    stdin.off('error', onError);
    // a stdin left open (a terminal, a pipe nobody closes) must not keep this process alive
    stdin.destroy();
  }

  ws.on('open', () => {
    if (stopped) return ws.close(1000, 'detached');
    reading = true;
    stdin.on('data', onData);
    stdin.once('end', onEnd);
    stdin.once('error', onError);
    stdin.resume();
  });
  ws.on('message', (data: Buffer, isBinary: boolean) => {
    if (isBinary) return;
    let event: StdinEvent;
    try {
      event = JSON.parse(data.toString('utf8')) as StdinEvent;
    } catch {
      return;
    }
    if (event.type === 'ack') {
      outstanding -= event.bytes;
      if (reading && stdin.isPaused() && outstanding < STDIN_WINDOW_BYTES / 2) stdin.resume();
    } else if (event.type === 'closed') {
      // the ranks are done with it: stop reading, quietly
      stopReading();
    } else {
      process.stderr.write(`rankd: the job's stdin ended: ${event.message} (${event.code})\n`);
      stopReading();
    }
  });
  ws.on('unexpected-response', (_req, res) =>
    readUpgradeRefusal(res, (message) => {
      process.stderr.write(`rankd: stdin not forwarded: ${message}\n`);
      stopReading();
    }),
  );
  ws.on('error', (err: Error) => {
    if (!stopped) process.stderr.write(`rankd: stdin not forwarded: ${err.message}\n`);
    stopReading();
  });
  ws.on('close', () => stopReading());

  return {
    stop() {
      stopReading();
      if (ws.readyState === ws.OPEN) ws.close(1000, 'detached');
      else if (ws.readyState === ws.CONNECTING) ws.terminate();
    },
  };
}
