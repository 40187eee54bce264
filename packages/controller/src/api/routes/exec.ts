// Ad-hoc commands over REST: run argv (or an opted-in shell string) on every host a
// pattern selects; one report with every host's exit, output and duration. The exec belongs
// to the credential that asked for it: revoking that ends it (see ExecService.run).
import type { FastifyInstance } from 'fastify';
import type { ExecService } from '../../fleet/exec/exec-service.js';
import { streamOwner } from '../../streams/open-streams.js';
import { refuseRootLoaderEnv } from '../root-target.js';
import { serveRoutes } from '../route-table.js';

export async function execRoutes(app: FastifyInstance, opts: { exec: ExecService }): Promise<void> {
  serveRoutes(app, {
    'POST /v1/exec': async (request) => {
      refuseRootLoaderEnv(request.body.user, request.body.env, 'the command');
      const report = await opts.exec.run(request.body, streamOwner(request.principal!, request.dashboardSession));
      // allowed when it began, so the entry stays an allow; its reason says how it ended
      if (report.revoked)
        request.auditReason = `exec ended by revocation: ${report.revoked.code}: ${report.revoked.message}`;
      return report;
    },
  });
}
