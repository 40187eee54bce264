// Golden frames, valid and invalid, for the Open MPI job messages (ompi.*).
// test/protocol/messages.test.ts runs them with the others.
import { AgentMessages, ControllerMessages, type MessageMap } from '@rankd/protocol';

export interface OmpiGolden {
  map: MessageMap;
  frame: unknown;
  error?: string;
}

const INVALID = 'RANKD_INVALID_MESSAGE';
const UNKNOWN = 'RANKD_UNKNOWN_TYPE';
const launch = { rank: 0, argv: ['/usr/bin/python3', 'prog.py'], env: { RANK: '0' }, cpus: [0], memNodes: [0] };
const start = { type: 'ompi.start', jobId: 'j1', leaseMs: 15000, ranks: [launch] };
const orted = {
  jobFamily: '2024669184',
  vpid: 1,
  numProcs: 3,
  nodeRegex: 'host[1:1-3]@0(3)',
  hnpUri: '2024669184.0;tcp://10.77.0.1:38787;tcp6://[fd00::2]:44529',
};
const request = { type: 'ompi.daemon.request', jobId: 'j1', daemon: 0, host: 'host2', orted };
const run = { type: 'ompi.daemon.run', jobId: 'j1', daemon: 0, args: ['-mca', 'ess', 'env'] };
const state = { type: 'ompi.daemon.state', jobId: 'j1', daemon: 0, host: 'host2', state: 'started', pid: 4242 };

export const ompiGolden: Record<string, OmpiGolden[]> = {
  'ompi.start': [
    { map: ControllerMessages, frame: start },
    { map: ControllerMessages, frame: { ...start, launcher: { hosts: ['host1'], env: { OMPI_MCA_btl: 'self,tcp' } } } },
    { map: ControllerMessages, frame: { ...start, ranks: [] }, error: INVALID },
    { map: ControllerMessages, frame: { ...start, launcher: { hosts: [], env: {} } }, error: INVALID },
    { map: ControllerMessages, frame: { ...start, jobId: '../x' }, error: INVALID },
    { map: AgentMessages, frame: start, error: UNKNOWN },
  ],
  'ompi.abort': [
    { map: ControllerMessages, frame: { type: 'ompi.abort', jobId: 'j1', graceMs: 10000, reason: 'mpirun ended' } },
    { map: ControllerMessages, frame: { type: 'ompi.abort', jobId: 'j1', graceMs: -1, reason: 'x' }, error: INVALID },
  ],
  'ompi.daemon.request': [
    { map: AgentMessages, frame: request },
    // a node sends values, never a command
    { map: AgentMessages, frame: { ...request, command: 'touch /tmp/x' }, error: INVALID },
    { map: AgentMessages, frame: { ...request, orted: { ...orted, nodeRegex: 'a;touch /tmp/x' } }, error: INVALID },
    { map: AgentMessages, frame: { ...request, orted: { ...orted, hnpUri: '1.0;tcp://$(id):1' } }, error: INVALID },
    { map: AgentMessages, frame: { ...request, orted: { ...orted, prefix: '/tmp' } }, error: INVALID },
    { map: AgentMessages, frame: { ...request, host: '' }, error: INVALID },
    { map: ControllerMessages, frame: request, error: UNKNOWN },
  ],
  'ompi.daemon.run': [
    { map: ControllerMessages, frame: run },
    { map: ControllerMessages, frame: { ...run, daemon: -1 }, error: INVALID },
    { map: ControllerMessages, frame: { ...run, command: 'orted' }, error: INVALID },
    { map: AgentMessages, frame: run, error: UNKNOWN },
  ],
  'ompi.daemon.state': [
    { map: AgentMessages, frame: state },
    { map: ControllerMessages, frame: state },
    { map: AgentMessages, frame: { ...state, state: 'exited', code: 0, signal: null, output: '' } },
    { map: AgentMessages, frame: { ...state, state: 'failed', message: 'orted: not found' } },
    { map: AgentMessages, frame: { ...state, state: 'sleeping' }, error: INVALID },
  ],
  'ompi.launcher.state': [
    {
      map: AgentMessages,
      frame: {
        type: 'ompi.launcher.state',
        jobId: 'j1',
        state: 'exited',
        pid: 7,
        code: 1,
        signal: null,
        output: 'ORTE was unable to reliably start one or more daemons.',
      },
    },
    {
      map: AgentMessages,
      frame: { type: 'ompi.launcher.state', jobId: 'j1', state: 'started', surprise: 1 },
      error: INVALID,
    },
    { map: ControllerMessages, frame: { type: 'ompi.launcher.state', jobId: 'j1', state: 'started' }, error: UNKNOWN },
  ],
};
