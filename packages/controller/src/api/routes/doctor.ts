// The preflight doctor over REST: PASS/WARN/FAIL checks per node with one-line fixes,
// and the TCP connection matrix between the nodes when asked for.
import { DoctorRequest, DoctorResult, ErrorBody } from '@rankd/protocol';
import type { FastifyInstance } from 'fastify';
import type { TypeBoxTypeProvider } from '@fastify/type-provider-typebox';
import type { DoctorService } from '../../fleet/doctor/doctor-service.js';

export async function doctorRoutes(app: FastifyInstance, opts: { doctor: DoctorService }): Promise<void> {
  const api = app.withTypeProvider<TypeBoxTypeProvider>();
  api.post(
    '/v1/doctor',
    { schema: { tags: ['fleet'], summary: 'Preflight checks of the selected nodes (memlock, RDMA, NUMA, consistency, clocks, paths, reachability)', body: DoctorRequest, response: { 200: DoctorResult, 400: ErrorBody } } },
    async (request) => opts.doctor.run(request.body),
  );
}
