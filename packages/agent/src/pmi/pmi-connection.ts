// One rank's PMI-1 connection: the rank's end of an inherited socket (PMI_FD), or a TCP
// connection that names its rank with `cmd=initack pmiid=N` (PMI_PORT + PMI_ID). The
// client is strictly lock-step, so requests are answered one at a time, in order.
//
// Whatever arrives on the socket is untrusted: a line over the protocol's 1024 bytes, a
// line that is not key=value, or more unanswered input than a lock-step client can
// send ends this rank's PMI with a reason; an unknown command gets an error answer.
// Nothing here throws into the agent.
import type { Socket } from 'node:net';
import { PMI_KEY_MAX, PMI_VALUE_MAX } from '@rankd/protocol';
import type { PmiJob } from './pmi-job.js';
import { PMI_MAX_LINE, formatPmi, parsePmiLine, pmiText, type PmiRequest } from './wire.js';

/** Where a connection belongs: set at once for PMI_FD, by `initack` for PMI_PORT. */
export interface PmiTarget {
  job: PmiJob;
  rank: number;
}

export type PmiEnd =
  /** cmd=abort exitcode=N: the job ends with N. */
  | { kind: 'abort'; exitCode: number }
  /** The rank broke the protocol; its PMI is over. */
  | { kind: 'protocol'; reason: string }
  /** The socket closed: after finalize, before it, or before init (a program that is no MPI program). */
  | { kind: 'closed'; phase: 'before-init' | 'initialized' | 'finalized' };

export interface PmiConnectionHooks {
  /** PMI_PORT: the rank behind a PMI_ID, once; null for an id nobody was given. */
  claim(pmiid: number): PmiTarget | null;
  /** Called once, when the connection is over for whatever reason. */
  ended(connection: PmiConnection, end: PmiEnd): void;
}

/** How long a PMI_PORT connection may stay without naming its rank. */
const INITACK_TIMEOUT_MS = 10_000;

/** Unanswered input a lock-step client never has: one line in flight, plus a multi-line command. */
const MAX_BUFFERED = 64 * 1024;

const MAXES = { kvsname_max: 64, keylen_max: PMI_KEY_MAX, vallen_max: PMI_VALUE_MAX };

export class PmiConnection {
  private buffer = '';
  private queue: string[] = [];
  private busy = false;
  private phase: 'before-init' | 'initialized' | 'finalized' = 'before-init';
  private over = false;
  /** Lines of a multi-line command (spawn) being skipped until `endcmd`. */
  private multi: string | null = null;

  constructor(
    private readonly socket: Socket,
    private target: PmiTarget | null,
    private readonly hooks: PmiConnectionHooks,
  ) {
    socket.setEncoding('latin1');
    socket.on('data', (chunk: string) => this.onData(chunk));
    socket.on('error', () => this.end({ kind: 'closed', phase: this.phase }));
    socket.on('close', () => this.end({ kind: 'closed', phase: this.phase }));
    if (!target) {
      // anyone on this host can connect to the loopback port: one who never names a rank goes
      socket.setTimeout(INITACK_TIMEOUT_MS, () =>
        this.protocolError(`no cmd=initack within ${INITACK_TIMEOUT_MS / 1000} s`),
      );
    }
  }

  get rank(): number | null {
    return this.target?.rank ?? null;
  }

  get jobId(): string | null {
    return this.target?.job.jobId ?? null;
  }

  /** Closes the socket from our side (the job is over here); reports nothing. */
  close(): void {
    this.over = true;
    this.socket.destroy();
  }

  private onData(chunk: string): void {
    if (this.over) return;
    this.buffer += chunk;
    let nl: number;
    while ((nl = this.buffer.indexOf('\n')) >= 0) {
      const line = this.buffer.slice(0, nl);
      this.buffer = this.buffer.slice(nl + 1);
      if (line.length > PMI_MAX_LINE)
        return this.protocolError(`a line of ${line.length} bytes (the PMI-1 maximum is ${PMI_MAX_LINE})`);
      this.queue.push(line);
    }
    if (this.buffer.length > PMI_MAX_LINE)
      return this.protocolError(`more than ${PMI_MAX_LINE} bytes without a newline`);
    if (this.queue.reduce((n, l) => n + l.length, 0) > MAX_BUFFERED)
      return this.protocolError('input far ahead of the answers (PMI-1 is lock-step)');
    void this.drain();
  }

  private async drain(): Promise<void> {
    if (this.busy) return;
    this.busy = true;
    try {
      while (!this.over && this.queue.length > 0) await this.handle(this.queue.shift()!);
    } finally {
      this.busy = false;
    }
  }

  private async handle(line: string): Promise<void> {
    if (line.trim() === '') return;
    if (this.multi !== null) {
      if (line.trim() === 'endcmd') {
        this.write(
          formatPmi(`${this.multi}_result`, { rc: -1, errmsg: pmiText(`${this.multi} is not supported by rankd`) }),
        );
        this.multi = null;
      }
      return;
    }
    let req: PmiRequest;
    try {
      req = parsePmiLine(line);
    } catch (err) {
      return this.protocolError(err instanceof Error ? err.message : String(err));
    }
    if (req.multi) {
      this.multi = req.cmd;
      return;
    }
    if (!this.target) return this.initack(req);
    const { job, rank } = this.target;
    const arg = (k: string) => req.args.get(k) ?? '';
    try {
      switch (req.cmd) {
        case 'init': {
          const version = arg('pmi_version');
          if (version !== '1') {
            return this.write(
              formatPmi('response_to_init', {
                rc: -1,
                pmi_version: 1,
                pmi_subversion: 1,
                msg: pmiText(`this server speaks PMI-1, not PMI-${version}`),
              }),
            );
          }
          this.phase = 'initialized';
          return this.write(formatPmi('response_to_init', { rc: 0, pmi_version: 1, pmi_subversion: 1 }));
        }
        case 'get_maxes':
          return this.write(formatPmi('maxes', { rc: 0, ...MAXES }));
        case 'get_appnum':
          return this.write(formatPmi('appnum', { rc: 0, appnum: 0 }));
        case 'get_my_kvsname':
          return this.write(formatPmi('my_kvsname', { rc: 0, kvsname: job.kvsname }));
        case 'get_universe_size':
          return this.write(formatPmi('universe_size', { rc: 0, size: job.spec.size }));
        case 'put': {
          const problem =
            this.finalizedProblem('put') ??
            kvsProblem(job, arg('kvsname')) ??
            keyProblem(arg('key')) ??
            valueProblem(req.args.get('value'));
          if (problem) return this.write(formatPmi('put_result', { rc: -1, msg: pmiText(problem) }));
          job.put(arg('key'), req.args.get('value')!);
          return this.write(formatPmi('put_result', { rc: 0 }));
        }
        case 'get': {
          const problem = this.finalizedProblem('get') ?? kvsProblem(job, arg('kvsname')) ?? keyProblem(arg('key'));
          if (problem) return this.write(formatPmi('get_result', { rc: -1, msg: pmiText(problem) }));
          const value = await job.get(arg('key'));
          if (value === undefined)
            return this.write(formatPmi('get_result', { rc: -1, msg: pmiText(`key ${arg('key')} not found`) }));
          return this.write(formatPmi('get_result', { rc: 0, value }));
        }
        case 'barrier_in': {
          const problem = this.finalizedProblem('barrier_in');
          if (problem) return this.write(formatPmi('barrier_out', { rc: -1, msg: pmiText(problem) }));
          await job.barrier(rank);
          return this.write(formatPmi('barrier_out', { rc: 0 }));
        }
        case 'finalize':
          this.phase = 'finalized';
          return this.write(formatPmi('finalize_ack', { rc: 0 }));
        case 'abort': {
          const n = Number.parseInt(arg('exitcode'), 10);
          return this.end({ kind: 'abort', exitCode: Number.isInteger(n) ? n : 1 });
        }
        case 'publish_name':
        case 'unpublish_name':
        case 'lookup_name':
          return this.write(
            formatPmi(`${req.cmd}_result`, { rc: -1, msg: pmiText(`${req.cmd} is not supported by rankd`) }),
          );
        default:
          return this.write(formatPmi('error', { rc: -1, msg: pmiText(`unknown command ${req.cmd.slice(0, 64)}`) }));
      }
    } catch (err) {
      // the job's PMI has failed here (it is being aborted): answer, and the client gives up
      this.write(formatPmi('error', { rc: -1, msg: pmiText(err instanceof Error ? err.message : String(err)) }));
    }
  }

  /** PMI_PORT: the first line names the rank, and the answer tells it its size and rank. */
  private initack(req: PmiRequest): void {
    const id = Number(req.args.get('pmiid'));
    const target = req.cmd === 'initack' && Number.isSafeInteger(id) ? this.hooks.claim(id) : null;
    if (!target)
      return this.protocolError(
        req.cmd === 'initack'
          ? 'a PMI_ID this agent did not give out, or one already used'
          : `expected cmd=initack first, got cmd=${req.cmd.slice(0, 64)}`,
      );
    this.target = target;
    this.socket.setTimeout(0);
    this.write(
      formatPmi('initack', { rc: 0 }) +
        formatPmi('set', { size: target.job.spec.size }) +
        formatPmi('set', { rank: target.rank }) +
        formatPmi('set', { debug: 0 }),
    );
  }

  private finalizedProblem(cmd: string): string | null {
    return this.phase === 'finalized' ? `${cmd} after finalize` : null;
  }

  private protocolError(reason: string): void {
    this.write(formatPmi('error', { rc: -1, msg: pmiText(reason) }));
    this.end({ kind: 'protocol', reason });
  }

  private write(text: string): void {
    if (!this.over && this.socket.writable) this.socket.write(text, 'latin1');
  }

  private end(end: PmiEnd): void {
    if (this.over) return;
    this.over = true;
    this.queue = [];
    // let a last error answer go out before the socket closes
    this.socket.end();
    setTimeout(() => this.socket.destroy(), 1000).unref();
    this.hooks.ended(this, end);
  }
}

function kvsProblem(job: PmiJob, kvsname: string): string | null {
  return kvsname === job.kvsname ? null : `unknown kvsname ${kvsname.slice(0, 64)}`;
}

function keyProblem(key: string): string | null {
  if (key === '') return 'no key';
  return key.length > PMI_KEY_MAX ? `a key of ${key.length} bytes (at most ${PMI_KEY_MAX})` : null;
}

function valueProblem(value: string | undefined): string | null {
  if (value === undefined) return 'no value';
  return value.length > PMI_VALUE_MAX ? `a value of ${value.length} bytes (at most ${PMI_VALUE_MAX})` : null;
}
