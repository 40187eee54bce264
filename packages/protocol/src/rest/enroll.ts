// REST schemas of enrollment: join tokens, node certificates, node removal.
// The answers are what the routes send, field for field: fastify serializes with them, so a
// field missing here would be dropped from the answer.
import Type from 'typebox';
import { DESCRIPTION_CHARS, JOIN_TOKEN_TTL_SECONDS, JOIN_TOKEN_USES, schemaBounds, schemaLength } from '../limits.js';

/** A join token's public id, the part before the dot: names it in lists and revocations. */
const JoinTokenId = Type.String({ pattern: '^[a-z0-9]{6}$' });

/** SHA-256 of the controller's CA public key, as `rankd agent --ca-hash` takes it. */
const CaHash = Type.String({ pattern: '^sha256:[0-9a-f]{64}$' });

export const EnrollBody = Type.Object(
  { token: Type.String({ maxLength: 64 }), csr: Type.String() },
  { additionalProperties: false },
);
export type EnrollBody = Type.Static<typeof EnrollBody>;

export const RenewBody = Type.Object({ csr: Type.String() }, { additionalProperties: false });
export type RenewBody = Type.Static<typeof RenewBody>;

/** A node certificate, issued at enrollment or renewal, with the CAs the node keeps. */
export const NodeCertificate = Type.Object({
  node: Type.String(),
  /** PEM. */
  certificate: Type.String(),
  /** Hex serial: what `rankd node remove` revokes and the gateway checks at every handshake. */
  serial: Type.String(),
  notAfter: Type.String({ description: 'ISO 8601' }),
  /** PEM: what the node trusts for the controller's server certificate. */
  ca: Type.String(),
  /** PEM: the cluster CA that signed the node certificate. */
  clusterCa: Type.String(),
});
export type NodeCertificate = Type.Static<typeof NodeCertificate>;

export const JoinTokenMint = Type.Object(
  {
    ttlSeconds: Type.Optional(Type.Integer(schemaBounds(JOIN_TOKEN_TTL_SECONDS))),
    uses: Type.Optional(Type.Integer(schemaBounds(JOIN_TOKEN_USES))),
    description: Type.Optional(Type.String(schemaLength(DESCRIPTION_CHARS))),
  },
  { additionalProperties: false },
);
export type JoinTokenMint = Type.Static<typeof JoinTokenMint>;

/** A new join token: the only time its secret is shown. */
export const JoinTokenMinted = Type.Object({
  /** id.secret, what `rankd agent --join-token` takes. */
  token: Type.String({ pattern: '^[a-z0-9]{6}\\.[a-z0-9]{16}$' }),
  id: JoinTokenId,
  expiresAt: Type.String({ description: 'ISO 8601' }),
  maxUses: Type.Integer(),
  caHash: CaHash,
});
export type JoinTokenMinted = Type.Static<typeof JoinTokenMinted>;

/** A join token as lists and revocations show it: never its secret. */
export const JoinTokenView = Type.Object({
  id: JoinTokenId,
  description: Type.String(),
  createdAt: Type.String({ description: 'ISO 8601' }),
  expiresAt: Type.String({ description: 'ISO 8601' }),
  maxUses: Type.Integer(),
  uses: Type.Integer(),
  revoked: Type.Boolean(),
  /** revoked wins over expired, expired over used. */
  state: Type.Union([Type.Literal('valid'), Type.Literal('expired'), Type.Literal('revoked'), Type.Literal('used')]),
});
export type JoinTokenView = Type.Static<typeof JoinTokenView>;

export const JoinTokenList = Type.Object({ tokens: Type.Array(JoinTokenView) });
export type JoinTokenList = Type.Static<typeof JoinTokenList>;

/** The id is not checked against the pattern here: an unknown one gets its own stable code. */
export const JoinTokenParams = Type.Object({ id: Type.String({ maxLength: 64 }) });
export type JoinTokenParams = Type.Static<typeof JoinTokenParams>;

/** What `rankd node remove` did: the certificates it revoked and the live links it dropped. */
export const NodeRemoved = Type.Object({
  node: Type.String(),
  revokedSerials: Type.Array(Type.String()),
  droppedLinks: Type.Integer(),
});
export type NodeRemoved = Type.Static<typeof NodeRemoved>;

export const NodeRemoveParams = Type.Object({ name: Type.String({ maxLength: 128 }) });
export type NodeRemoveParams = Type.Static<typeof NodeRemoveParams>;
