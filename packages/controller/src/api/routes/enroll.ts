// Enrollment over REST. The route table says which routes are open and names their own
// `security`, so that the OpenAPI document does not claim they need an API token.
//   GET  /v1/enroll/ca      open: the CA that clients and agents trust (PEM); agents pin it by hash
//   POST /v1/enroll         open, authenticated by the join token: {token, csr} → node certificate
//   POST /v1/enroll/renew   open, authenticated by the node's client certificate: {csr} → a new one
//   POST/GET /v1/join-tokens, DELETE /v1/join-tokens/:id, DELETE /v1/nodes/:name   API token
import { ErrorCode, RankdError } from '@rankd/protocol';
import type { FastifyInstance } from 'fastify';
import type { Enrollment } from '../../tls/enrollment.js';
import { peerNode } from '../../tls/tls-setup.js';
import { serveRoutes } from '../route-table.js';

export interface EnrollDeps {
  enrollment: Enrollment;
  trustPem: string;
  caHash: string;
  /** Node certificates carry the cluster CA; the agent keeps it for the record. */
  clusterCaPem: string;
  /** Revokes a node: drops its live link (the gateway). */
  dropNode: (node: string, reason: string) => number;
}

export async function enrollRoutes(app: FastifyInstance, deps: EnrollDeps): Promise<void> {
  const { enrollment } = deps;
  const answer = (issued: { node: string; certificate: string; serial: string; notAfter: number }) => ({
    node: issued.node,
    certificate: issued.certificate,
    serial: issued.serial,
    notAfter: new Date(issued.notAfter).toISOString(),
    ca: deps.trustPem,
    clusterCa: deps.clusterCaPem,
  });

  serveRoutes(app, {
    'GET /v1/enroll/ca': async (_request, reply) => {
      reply.header('x-rankd-ca-hash', deps.caHash);
      return reply.type('application/x-pem-file').send(deps.trustPem);
    },

    'POST /v1/enroll': async (request) => {
      const issued = await enrollment.enroll(request.body.token, request.body.csr);
      if (issued.replaced.length === 0) request.log.info({ node: issued.node, serial: issued.serial }, 'node enrolled');
      else {
        // a rejoin: whatever still holds the old certificate is cut off now, not at its next handshake
        const dropped = deps.dropNode(
          issued.node,
          "a new agent enrolled under its name with the instance's join token",
        );
        request.log.warn(
          { node: issued.node, serial: issued.serial, revoked: issued.replaced, dropped },
          'node enrolled again under its name; its earlier certificates are revoked',
        );
      }
      return answer(issued);
    },

    'POST /v1/enroll/renew': async (request) => {
      const peer = peerNode(request.raw.socket);
      if (!peer.ok) throw new RankdError(peer.code, peer.message);
      const issued = await enrollment.renew(peer, request.body.csr);
      request.log.info({ node: issued.node, serial: issued.serial }, 'node certificate renewed');
      return answer(issued);
    },

    'POST /v1/join-tokens': async (request) => {
      const b = request.body ?? {};
      const minted = enrollment.mintJoinToken({
        ...(b.ttlSeconds ? { ttlMs: b.ttlSeconds * 1000 } : {}),
        ...(b.uses ? { uses: b.uses } : {}),
        ...(b.description ? { description: b.description } : {}),
      });
      request.log.info({ id: minted.id, expiresAt: minted.expiresAt, maxUses: minted.maxUses }, 'join token minted');
      return { ...minted, caHash: deps.caHash };
    },

    'GET /v1/join-tokens': async () => ({ tokens: enrollment.listJoinTokens() }),

    'DELETE /v1/join-tokens/:id': async (request) => {
      const view = enrollment.revokeJoinToken(request.params.id);
      request.log.info({ id: view.id }, 'join token revoked');
      return view;
    },

    'DELETE /v1/nodes/:name': async (request) => {
      const name = request.params.name;
      if (!enrollment.knows(name)) throw new RankdError(ErrorCode.NodeNotFound, `no node "${name}" was ever enrolled`);
      const revoked = enrollment.revokeNode(name);
      const dropped = deps.dropNode(name, 'node removed: its certificate was revoked');
      request.log.warn({ node: name, revoked, dropped }, 'node removed; certificates revoked');
      return { node: name, revokedSerials: revoked, droppedLinks: dropped };
    },
  });
}
