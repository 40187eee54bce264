// The preflight doctor over REST: PASS/WARN/FAIL checks per node with one-line fixes,
// and the TCP connection matrix between the nodes when asked for.
import type { FastifyInstance } from 'fastify';
import type { DoctorService } from '../../fleet/doctor/doctor-service.js';
import { serveRoutes } from '../route-table.js';

export async function doctorRoutes(app: FastifyInstance, opts: { doctor: DoctorService }): Promise<void> {
  serveRoutes(app, { 'POST /v1/doctor': async (request) => opts.doctor.run(request.body) });
}
