// Ad-hoc commands over REST: run argv (or an opted-in shell string) on every host a
// pattern selects; one report with every host's exit, output and duration.
import { ErrorBody, ExecReport, ExecRequest } from '@rankd/protocol';
import type { FastifyInstance } from 'fastify';
import type { TypeBoxTypeProvider } from '@fastify/type-provider-typebox';
import type { ExecService } from '../../fleet/exec/exec-service.js';
import { installFleetErrors } from '../../fleet/inventory/http-status.js';
import { refuseRootLoaderEnv } from '../root-target.js';

export async function execRoutes(app: FastifyInstance, opts: { exec: ExecService }): Promise<void> {
  installFleetErrors(app);
  const api = app.withTypeProvider<TypeBoxTypeProvider>();
  api.post(
    '/v1/exec',
    { schema: { tags: ['fleet'], summary: 'Run a command on every host a pattern selects, in parallel', body: ExecRequest, response: { 200: ExecReport, 400: ErrorBody } } },
    async (request) => {
      refuseRootLoaderEnv(request.body.user, request.body.env, 'the command');
      return opts.exec.run(request.body);
    },
  );
}
