// Enrollment over REST. The open routes say so in their schemas (`security`), so that the
// OpenAPI document does not claim they need an API token.
//   GET  /v1/enroll/ca      open: the CA that clients and agents trust (PEM); agents pin it by hash
//   POST /v1/enroll         open, authenticated by the join token: {token, csr} → node certificate
//   POST /v1/enroll/renew   open, authenticated by the node's client certificate: {csr} → a new one
//   POST/GET /v1/join-tokens, DELETE /v1/join-tokens/:id, DELETE /v1/nodes/:name   API token
import {
  EnrollBody,
  ErrorBody,
  ErrorCode,
  JoinTokenList,
  JoinTokenMint,
  JoinTokenMinted,
  JoinTokenParams,
  JoinTokenView,
  MAX_CSR_BYTES,
  NodeCertificate,
  NodeRemoveParams,
  NodeRemoved,
  RankdError,
  RenewBody,
} from '@rankd/protocol';
import type { FastifyInstance } from 'fastify';
import type { TypeBoxTypeProvider } from '@fastify/type-provider-typebox';
import type { Enrollment } from '../../tls/enrollment.js';
import { peerNode } from '../../tls/tls-setup.js';

export const ENROLL_OPEN_ROUTES = ['/v1/enroll/ca', '/v1/enroll', '/v1/enroll/renew'];
/** Request bodies of the enroll routes: a CSR plus a token fits well under this; more is RANKD_CSR_TOO_LARGE. */
export const ENROLL_BODY_LIMIT = MAX_CSR_BYTES + 1024;

export interface EnrollDeps {
  enrollment: Enrollment;
  trustPem: string;
  caHash: string;
  /** Node certificates carry the cluster CA; the agent keeps it for the record. */
  clusterCaPem: string;
  /** Revokes a node: drops its live link (the gateway). */
  dropNode: (node: string, reason: string) => number;
}

// The refusals of the open routes, which the document's shared 401/403 do not cover: they
// name their own security. Every one is an ErrorBody with a stable code (api/errors.ts).
const ENROLL_REFUSALS = { 400: ErrorBody, 401: ErrorBody, 409: ErrorBody, 413: ErrorBody };

export async function enrollRoutes(app: FastifyInstance, deps: EnrollDeps): Promise<void> {
  const api = app.withTypeProvider<TypeBoxTypeProvider>();
  const { enrollment } = deps;
  const answer = (issued: { node: string; certificate: string; serial: string; notAfter: number }) => ({
    node: issued.node,
    certificate: issued.certificate,
    serial: issued.serial,
    notAfter: new Date(issued.notAfter).toISOString(),
    ca: deps.trustPem,
    clusterCa: deps.clusterCaPem,
  });

  api.get('/v1/enroll/ca', { schema: { tags: ['enroll'], summary: 'The CA certificate clients trust (PEM); pin it by the SHA-256 of its public key', security: [] } }, async (_request, reply) => {
    reply.header('x-rankd-ca-hash', deps.caHash);
    return reply.type('application/x-pem-file').send(deps.trustPem);
  });

  api.post('/v1/enroll', { bodyLimit: ENROLL_BODY_LIMIT, schema: { tags: ['enroll'], summary: 'Enroll a node: join token + CSR → node certificate', security: [], body: EnrollBody, response: { 200: NodeCertificate, ...ENROLL_REFUSALS } } }, async (request) => {
    const issued = await enrollment.enroll(request.body.token, request.body.csr);
    request.log.info({ node: issued.node, serial: issued.serial }, 'node enrolled');
    return answer(issued);
  });

  api.post('/v1/enroll/renew', { bodyLimit: ENROLL_BODY_LIMIT, schema: { tags: ['enroll'], summary: "Renew the calling node's certificate (mTLS)", security: [{ nodeCertificate: [] }], body: RenewBody, response: { 200: NodeCertificate, ...ENROLL_REFUSALS, 403: ErrorBody } } }, async (request) => {
    const peer = peerNode(request.raw.socket);
    if (!peer.ok) throw new RankdError(peer.code, peer.message);
    const issued = await enrollment.renew(peer, request.body.csr);
    request.log.info({ node: issued.node, serial: issued.serial }, 'node certificate renewed');
    return answer(issued);
  });

  api.post('/v1/join-tokens', { schema: { tags: ['enroll'], summary: 'Mint a join token (shown once)', body: JoinTokenMint, response: { 200: JoinTokenMinted, 400: ErrorBody } } }, async (request) => {
    const b = request.body ?? {};
    const minted = enrollment.mintJoinToken({
      ...(b.ttlSeconds ? { ttlMs: b.ttlSeconds * 1000 } : {}),
      ...(b.uses ? { uses: b.uses } : {}),
      ...(b.description ? { description: b.description } : {}),
    });
    request.log.info({ id: minted.id, expiresAt: minted.expiresAt, maxUses: minted.maxUses }, 'join token minted');
    return { ...minted, caHash: deps.caHash };
  });

  api.get('/v1/join-tokens', { schema: { tags: ['enroll'], summary: 'Join tokens (ids and state; never the secrets)', response: { 200: JoinTokenList } } }, async () => ({ tokens: enrollment.listJoinTokens() }));

  api.delete('/v1/join-tokens/:id', { schema: { tags: ['enroll'], summary: 'Revoke a join token', params: JoinTokenParams, response: { 200: JoinTokenView } } }, async (request) => {
    const view = enrollment.revokeJoinToken(request.params.id);
    request.log.info({ id: view.id }, 'join token revoked');
    return view;
  });

  api.delete('/v1/nodes/:name', { schema: { tags: ['nodes'], summary: "Remove a node: revoke its certificates and drop its link", params: NodeRemoveParams, response: { 200: NodeRemoved, 404: ErrorBody } } }, async (request) => {
    const name = request.params.name;
    if (!enrollment.knows(name)) throw new RankdError(ErrorCode.NodeNotFound, `no node "${name}" was ever enrolled`);
    const revoked = enrollment.revokeNode(name);
    const dropped = deps.dropNode(name, 'node removed: its certificate was revoked');
    request.log.warn({ node: name, revoked, dropped }, 'node removed; certificates revoked');
    return { node: name, revokedSerials: revoked, droppedLinks: dropped };
  });
}
