// scale: the controller holding 2,000 agents that are connected and heartbeating, at
// rest. The agents are simulated: a few Node processes each speaking the real session
// protocol over many WebSocket connections to 127.0.0.1. Pending on the simulator
// (bench/pending/scale-sim.ts).
import { notMeasured, type BenchContext, type FigureDescriptor, type FigureReport } from '../lib/figure.js';
import { whyScalePending } from '../pending/scale-sim.js';

export const SCALE_AGENTS = 2000;

export const scaleFigure: FigureDescriptor = {
  name: 'scale',
  title: `controller with ${SCALE_AGENTS.toLocaleString('en-US')} simulated agents`,
  peers: [],
  run,
};

async function run(ctx: BenchContext): Promise<FigureReport> {
  const why = notMeasured(await whyScalePending(ctx));
  const label = `controller, ${SCALE_AGENTS.toLocaleString('en-US')} agents connected and heartbeating`;
  return {
    rows: [
      { figure: `${label}: RSS`, rankd: why, goals: [{ on: 'rankd', op: '<', value: 500, text: 'RSS < 500 MB' }] },
      { figure: `${label}: CPU at rest`, rankd: why, goals: [{ on: 'rankd', op: '<', value: 10, text: 'CPU < 10% of one core' }] },
    ],
    notes: ['Planned set-up: 4 simulator processes × 500 WebSocket connections each, all to 127.0.0.1; RSS and CPU of the controller pid sampled from /proc over 60 s after the last agent registered.'],
    limits: 'Bounded by per-connection memory (socket buffers, session state, the last facts of each node) and by the heartbeat rate times the cost of validating and recording one heartbeat.',
    peersUsed: [],
  };
}
