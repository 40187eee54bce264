// Golden frames of the fabric probes (`rankd check net`): what the schemas accept, and the
// hostile shapes they refuse before an agent builds an argv from them.
import { AgentMessages, ControllerMessages } from '@rankd/protocol';

const INVALID = 'RANKD_INVALID_MESSAGE';
const serve = {
  type: 'fabric.serve',
  id: 's1',
  tool: 'iperf3',
  durationS: 2,
  address: '10.0.0.5',
  ports: [29600, 29601],
  ttlMs: 9000,
};
const measure = {
  type: 'fabric.measure',
  id: 'm1',
  tool: 'iperf3',
  durationS: 2,
  address: '10.0.0.5',
  port: 29600,
  bind: '10.0.0.6',
  timeoutMs: 6000,
};

export const fabricGolden = {
  'fabric.serve': [
    { map: ControllerMessages, frame: serve },
    { map: ControllerMessages, frame: { ...serve, tool: 'ib_write_bw', device: 'mlx5_0', gidIndex: 3 } },
    { map: ControllerMessages, frame: { ...serve, tool: 'ib_write_bw', device: 'mlx5_0', ibPort: 2, gidIndex: 3 } },
    // perftest's -i takes a port number: not 0, not a string
    { map: ControllerMessages, frame: { ...serve, tool: 'ib_write_bw', device: 'mlx5_0', ibPort: 0 }, error: INVALID },
    { map: ControllerMessages, frame: { ...serve, tool: 'ib_write_bw', ibPort: '1 -R' }, error: INVALID },
    { map: ControllerMessages, frame: { ...serve, address: 'fe80::1' } },
    // a program outside the closed list
    { map: ControllerMessages, frame: { ...serve, tool: 'sh' }, error: INVALID },
    // a host name would consult a resolver, and "-" could pass for an option
    { map: ControllerMessages, frame: { ...serve, address: 'evil.example.com' }, error: INVALID },
    { map: ControllerMessages, frame: { ...serve, tool: 'ib_write_bw', device: '--run=x' }, error: INVALID },
    { map: ControllerMessages, frame: { ...serve, ports: [] }, error: INVALID },
    { map: ControllerMessages, frame: { ...serve, ports: [22] }, error: INVALID },
    { map: ControllerMessages, frame: { ...serve, durationS: 0 }, error: INVALID },
    { map: ControllerMessages, frame: { ...serve, argv: ['iperf3', '-s'] }, error: INVALID },
  ],
  'fabric.serving': [
    { map: AgentMessages, frame: { type: 'fabric.serving', id: 's1', port: 29600 } },
    {
      map: AgentMessages,
      frame: {
        type: 'fabric.serving',
        id: 's1',
        port: null,
        error: { code: 'RANKD_PROBE_TOOL_MISSING', message: 'iperf3 is not installed (apt install iperf3)' },
      },
    },
    { map: AgentMessages, frame: { type: 'fabric.serving', id: 's1', port: 80 }, error: INVALID },
  ],
  'fabric.stop': [
    { map: ControllerMessages, frame: { type: 'fabric.stop', id: 's1' } },
    { map: ControllerMessages, frame: { type: 'fabric.stop' }, error: INVALID },
  ],
  'fabric.measure': [
    { map: ControllerMessages, frame: measure },
    { map: ControllerMessages, frame: { ...measure, address: '-h' }, error: INVALID },
    { map: ControllerMessages, frame: { ...measure, bind: '10.0.0.6 -R' }, error: INVALID },
    { map: ControllerMessages, frame: { ...measure, gidIndex: 256 }, error: INVALID },
  ],
  'fabric.measured': [
    {
      map: AgentMessages,
      frame: {
        type: 'fabric.measured',
        id: 'm1',
        forwardBps: 9.41e9,
        reverseBps: 9.39e9,
        latencyUs: 12.5,
        durationMs: 2040,
        timedOut: false,
      },
    },
    {
      map: AgentMessages,
      frame: {
        type: 'fabric.measured',
        id: 'm1',
        forwardBps: null,
        reverseBps: null,
        latencyUs: null,
        durationMs: 6000,
        timedOut: true,
        error: { code: 'RANKD_PROBE_TIMEOUT', message: 'iperf3 to 10.0.0.5:29600 ran past 6000 ms and was ended' },
      },
    },
    {
      map: AgentMessages,
      frame: {
        type: 'fabric.measured',
        id: 'm1',
        forwardBps: -1,
        reverseBps: null,
        latencyUs: null,
        durationMs: 1,
        timedOut: false,
      },
      error: INVALID,
    },
  ],
};
