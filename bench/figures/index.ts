// Every figure, in the order RESULTS.md lists them.
import type { FigureDescriptor } from '../lib/figure.js';
import { agentRestFigure } from './agent-rest.js';
import { execFigure } from './exec.js';
import { factsFigure } from './facts.js';
import { fanoutFigure } from './fanout.js';
import { latencyFigure } from './latency.js';
import { launchFigure } from './launch.js';
import { logsFigure } from './logs.js';
import { planFigure } from './plan.js';
import { scaleFigure } from './scale.js';

export const figures: readonly FigureDescriptor[] = [
  factsFigure,
  planFigure,
  launchFigure,
  fanoutFigure,
  logsFigure,
  latencyFigure,
  execFigure,
  scaleFigure,
  agentRestFigure,
];
