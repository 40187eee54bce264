// Every figure, in the order RESULTS.md lists them.
import type { FigureDescriptor } from '../lib/figure.js';
import { agentRestFigure } from './agent-rest.js';
import { dashboardFigure } from './dashboard.js';
import { execFigure } from './exec.js';
import { factsFigure } from './facts.js';
import { fanoutFigure } from './fanout.js';
import { latencyFigure } from './latency.js';
import { launchFigure } from './launch.js';
import { logsFigure } from './logs.js';
import { mpiLaunchFigure } from './mpi-launch.js';
import { netcheckFigure } from './netcheck.js';
import { netcheckPreflightFigure } from './netcheck-preflight.js';
import { netcheckScaleFigure } from './netcheck-scale.js';
import { planFigure } from './plan.js';
import { restartFigure } from './restart.js';
import { pmiFenceFigure } from './pmi-fence.js';
import { restartHostsFigure } from './restart-hosts.js';
import { restartScaleFigure } from './restart-scale.js';
import { scaleFigure } from './scale.js';
import { scaleLaunchFigure } from './scale-launch.js';
import { scheduleFigure } from './schedule.js';
import { slurmFigure } from './slurm.js';

export const figures: readonly FigureDescriptor[] = [
  factsFigure,
  planFigure,
  scheduleFigure,
  launchFigure,
  mpiLaunchFigure,
  fanoutFigure,
  logsFigure,
  latencyFigure,
  execFigure,
  scaleFigure,
  scaleLaunchFigure,
  restartHostsFigure,
  restartScaleFigure,
  pmiFenceFigure,
  agentRestFigure,
  dashboardFigure,
  restartFigure,
  netcheckFigure,
  netcheckPreflightFigure,
  netcheckScaleFigure,
  slurmFigure,
];
