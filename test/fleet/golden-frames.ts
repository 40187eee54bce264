// Golden frames, valid and invalid, for every fleet message (exec, ping, doctor, probes,
// PTY sessions). test/protocol/messages.test.ts runs them with the others.
import { AgentMessages, ControllerMessages, type MessageMap } from '@rankd/protocol';

export interface FleetGolden {
  map: MessageMap;
  frame: unknown;
  /** undefined: valid; otherwise the expected error code */
  error?: string;
}

const INVALID = 'RANKD_INVALID_MESSAGE';
const UNKNOWN = 'RANKD_UNKNOWN_TYPE';
const b64 = (s: string) => Buffer.from(s).toString('base64');

const run = { type: 'exec.run', id: 'e1', argv: ['uname', '-r'], timeoutMs: 60_000, maxOutputBytes: 65536 };
const result = {
  type: 'exec.result',
  id: 'e1',
  code: 0,
  signal: null,
  stdout: b64('6.8.0\n'),
  stderr: '',
  stdoutBytes: 6,
  stderrBytes: 0,
  durationMs: 3.2,
  timedOut: false,
};
const open = { type: 'pty.open', id: 's1', cols: 80, rows: 24, term: 'xterm-256color' };

export const fleetGolden: Record<string, FleetGolden[]> = {
  'exec.run': [
    { map: ControllerMessages, frame: run },
    { map: ControllerMessages, frame: { ...run, cwd: '/tmp', env: { OMP_NUM_THREADS: '4' }, user: 'alice' } },
    { map: ControllerMessages, frame: { ...run, id: undefined }, error: INVALID },
    { map: ControllerMessages, frame: { ...run, argv: 'uname -r' }, error: INVALID },
    { map: ControllerMessages, frame: { ...run, argv: [] }, error: INVALID },
    { map: ControllerMessages, frame: { ...run, maxOutputBytes: 10_000_000 }, error: INVALID },
    { map: ControllerMessages, frame: { ...run, env: { 'BAD NAME': 'x' } }, error: INVALID },
    { map: AgentMessages, frame: run, error: UNKNOWN },
  ],
  'exec.result': [
    { map: AgentMessages, frame: result },
    { map: AgentMessages, frame: { ...result, code: null, signal: 'SIGKILL', timedOut: true } },
    {
      map: AgentMessages,
      frame: {
        ...result,
        code: null,
        error: { code: 'RANKD_EXEC_SPAWN', message: 'cannot run "nosuch": no such program on PATH' },
      },
    },
    { map: AgentMessages, frame: { ...result, stdout: 'not base64!' }, error: INVALID },
    { map: AgentMessages, frame: { ...result, stdoutBytes: -1 }, error: INVALID },
    { map: AgentMessages, frame: { ...result, signal: 'kill' }, error: INVALID },
  ],
  'exec.cancel': [
    {
      map: ControllerMessages,
      frame: { type: 'exec.cancel', id: 'e1', reason: 'ended: its API token abc was revoked' },
    },
    { map: ControllerMessages, frame: { type: 'exec.cancel', id: 'e1' }, error: INVALID },
    { map: ControllerMessages, frame: { type: 'exec.cancel', id: 'e1', reason: 'x'.repeat(1025) }, error: INVALID },
    { map: AgentMessages, frame: { type: 'exec.cancel', id: 'e1', reason: 'x' }, error: UNKNOWN },
  ],
  'fleet.ping': [
    { map: ControllerMessages, frame: { type: 'fleet.ping', id: 'p1' } },
    { map: ControllerMessages, frame: { type: 'fleet.ping' }, error: INVALID },
  ],
  'fleet.pong': [
    { map: AgentMessages, frame: { type: 'fleet.pong', id: 'p1', agentTime: 1_795_000_000_000 } },
    { map: AgentMessages, frame: { type: 'fleet.pong', id: 'p1' }, error: INVALID },
  ],
  'doctor.inspect': [
    { map: ControllerMessages, frame: { type: 'doctor.inspect', id: 'd1', paths: ['/mnt/models'] } },
    { map: ControllerMessages, frame: { type: 'doctor.inspect', id: 'd1', paths: [''] }, error: INVALID },
  ],
  'doctor.report': [
    {
      map: AgentMessages,
      frame: {
        type: 'doctor.report',
        id: 'd1',
        agentTime: 1,
        numactl: '/usr/bin/numactl',
        paths: [{ path: '/mnt/models', exists: true, kind: 'directory', error: null }],
      },
    },
    {
      map: AgentMessages,
      frame: {
        type: 'doctor.report',
        id: 'd1',
        agentTime: 1,
        numactl: null,
        paths: [{ path: '/mnt/x', exists: false, kind: null, error: 'ENOENT' }],
      },
    },
    {
      map: AgentMessages,
      frame: {
        type: 'doctor.report',
        id: 'd1',
        agentTime: 1,
        numactl: null,
        paths: [],
        launcher: { path: '/opt/rankd/app/packages/agent/dist/native/rank-supervisor', version: '4', problem: null },
      },
    },
    {
      map: AgentMessages,
      frame: {
        type: 'doctor.report',
        id: 'd1',
        agentTime: 1,
        numactl: '/usr/bin/numactl',
        paths: [],
        launcher: { path: '/x/rank-supervisor', version: null, problem: 'the rank supervisor is not built' },
      },
    },
    // how the agent runs: an ephemeral agent as its user; an older agent omits it
    {
      map: AgentMessages,
      frame: {
        type: 'doctor.report',
        id: 'd1',
        agentTime: 1,
        numactl: null,
        paths: [],
        agent: { ephemeral: true, user: 'alice', uid: 1000 },
      },
    },
    {
      map: AgentMessages,
      frame: {
        type: 'doctor.report',
        id: 'd1',
        agentTime: 1,
        numactl: null,
        paths: [],
        agent: { ephemeral: true, user: 'alice' },
      },
      error: INVALID,
    },
    // the probe programs of `rankd check net`: where each is, or null; an older agent omits them
    {
      map: AgentMessages,
      frame: {
        type: 'doctor.report',
        id: 'd1',
        agentTime: 1,
        numactl: null,
        paths: [],
        probeTools: { iperf3: '/usr/bin/iperf3', ib_write_bw: null, ib_write_lat: null },
      },
    },
    {
      map: AgentMessages,
      frame: {
        type: 'doctor.report',
        id: 'd1',
        agentTime: 1,
        numactl: null,
        paths: [],
        probeTools: { iperf3: null, ib_write_bw: '/usr/bin/ib_write_bw' },
      },
      error: INVALID,
    },
    {
      map: AgentMessages,
      frame: {
        type: 'doctor.report',
        id: 'd1',
        agentTime: 1,
        numactl: null,
        paths: [],
        probeTools: { iperf3: null, ib_write_bw: null, ib_write_lat: null, nccl_tests: '/x' },
      },
      error: INVALID,
    },
    {
      map: AgentMessages,
      frame: {
        type: 'doctor.report',
        id: 'd1',
        agentTime: 1,
        numactl: null,
        paths: [],
        probeTools: { iperf3: true, ib_write_bw: null, ib_write_lat: null },
      },
      error: INVALID,
    },
    {
      map: AgentMessages,
      frame: {
        type: 'doctor.report',
        id: 'd1',
        agentTime: 1,
        numactl: null,
        paths: [],
        launcher: { kind: 'perl', path: '/x', version: null, problem: null },
      },
      error: INVALID,
    },
    {
      map: AgentMessages,
      frame: {
        type: 'doctor.report',
        id: 'd1',
        agentTime: 1,
        numactl: null,
        paths: [],
        launcher: { path: '/x', problem: null },
      },
      error: INVALID,
    },
    {
      map: AgentMessages,
      frame: {
        type: 'doctor.report',
        id: 'd1',
        agentTime: 1,
        numactl: null,
        paths: [{ path: '/mnt/x', exists: false, kind: 'socket', error: null }],
      },
      error: INVALID,
    },
  ],
  'probe.listen': [
    { map: ControllerMessages, frame: { type: 'probe.listen', id: 'l1', address: '10.0.0.5', ttlMs: 20_000 } },
    {
      map: ControllerMessages,
      frame: { type: 'probe.listen', id: 'l1', address: '10.0.0.5', ttlMs: 5 },
      error: INVALID,
    },
  ],
  'probe.listening': [
    { map: AgentMessages, frame: { type: 'probe.listening', id: 'l1', address: '10.0.0.5', port: 40123 } },
    {
      map: AgentMessages,
      frame: {
        type: 'probe.listening',
        id: 'l1',
        address: '10.0.0.9',
        port: null,
        error: { code: 'EADDRNOTAVAIL', message: 'listen EADDRNOTAVAIL' },
      },
    },
    {
      map: AgentMessages,
      frame: { type: 'probe.listening', id: 'l1', address: '10.0.0.5', port: 70000 },
      error: INVALID,
    },
  ],
  'probe.connect': [
    {
      map: ControllerMessages,
      frame: {
        type: 'probe.connect',
        id: 'c1',
        targets: [{ node: 'node02', address: '10.0.0.6', port: 40123 }],
        timeoutMs: 3000,
      },
    },
    {
      map: ControllerMessages,
      frame: { type: 'probe.connect', id: 'c1', targets: [{ node: 'node02', address: '10.0.0.6' }], timeoutMs: 3000 },
      error: INVALID,
    },
  ],
  'probe.result': [
    {
      map: AgentMessages,
      frame: {
        type: 'probe.result',
        id: 'c1',
        results: [{ node: 'node02', ok: true, connectMs: 0.2, rttMs: 0.05, error: null }],
      },
    },
    {
      map: AgentMessages,
      frame: {
        type: 'probe.result',
        id: 'c1',
        results: [{ node: 'node02', ok: false, connectMs: null, rttMs: null, error: '10.0.0.6:40123: ECONNREFUSED' }],
      },
    },
    {
      map: AgentMessages,
      frame: {
        type: 'probe.result',
        id: 'c1',
        results: [{ node: 'node02', ok: 'yes', connectMs: null, rttMs: null, error: null }],
      },
      error: INVALID,
    },
  ],
  'pty.open': [
    { map: ControllerMessages, frame: open },
    { map: ControllerMessages, frame: { ...open, argv: ['python3'], user: 'alice', cwd: '/work' } },
    { map: ControllerMessages, frame: { ...open, cols: 0 }, error: INVALID },
    { map: ControllerMessages, frame: { ...open, term: 'xterm; rm -rf /' }, error: INVALID },
  ],
  'pty.opened': [
    { map: AgentMessages, frame: { type: 'pty.opened', id: 's1', pid: 4242 } },
    { map: AgentMessages, frame: { type: 'pty.opened', id: 's1', pid: 0 }, error: INVALID },
  ],
  'pty.input': [
    { map: ControllerMessages, frame: { type: 'pty.input', id: 's1', data: b64('ls\r') } },
    { map: ControllerMessages, frame: { type: 'pty.input', id: 's1', data: 'ls\r' }, error: INVALID },
  ],
  'pty.output': [
    { map: AgentMessages, frame: { type: 'pty.output', id: 's1', data: b64('$ ') } },
    { map: AgentMessages, frame: { type: 'pty.output', id: 's1' }, error: INVALID },
  ],
  'pty.ack': [
    { map: ControllerMessages, frame: { type: 'pty.ack', id: 's1', bytes: 4096 } },
    { map: ControllerMessages, frame: { type: 'pty.ack', id: 's1', bytes: 0 }, error: INVALID },
  ],
  'pty.resize': [
    { map: ControllerMessages, frame: { type: 'pty.resize', id: 's1', cols: 132, rows: 43 } },
    { map: ControllerMessages, frame: { type: 'pty.resize', id: 's1', cols: 132 }, error: INVALID },
  ],
  'pty.signal': [
    { map: ControllerMessages, frame: { type: 'pty.signal', id: 's1', signal: 'SIGINT' } },
    { map: ControllerMessages, frame: { type: 'pty.signal', id: 's1', signal: '2' }, error: INVALID },
  ],
  'pty.close': [
    { map: ControllerMessages, frame: { type: 'pty.close', id: 's1', reason: 'the client closed the connection' } },
    { map: ControllerMessages, frame: { type: 'pty.close', id: 's1' }, error: INVALID },
    { map: AgentMessages, frame: { type: 'pty.close', id: 's1', reason: 'x' }, error: UNKNOWN },
  ],
  'pty.exit': [
    { map: AgentMessages, frame: { type: 'pty.exit', id: 's1', code: 3, signal: null } },
    { map: AgentMessages, frame: { type: 'pty.exit', id: 's1', code: null, signal: 'SIGHUP' } },
    {
      map: AgentMessages,
      frame: {
        type: 'pty.exit',
        id: 's1',
        code: null,
        signal: null,
        error: { code: 'RANKD_PTY_SPAWN', message: 'cannot start nosuch' },
      },
    },
    { map: AgentMessages, frame: { type: 'pty.exit', id: 's1', code: 'three', signal: null }, error: INVALID },
  ],
};
