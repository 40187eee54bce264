// The HTTPS agent of a CLI that trusts only the pinned CA. Its connections trust nothing
// in OpenSSL (`ca: []`, so Node 20 never builds its bundled root store: pinned-ca.ts says
// why) and are handed to HTTP only after verifyPeer accepted the certificate: no request
// byte is written to a socket that was not verified. A certificate verifyPeer cannot vouch
// for is checked the usual way instead, on a new connection with Node's own verification
// against the same CA; a certificate it refuses is refused with the reason in its code.
import { Agent, type AgentOptions } from 'node:https';
import { connect, type ConnectionOptions, type TLSSocket } from 'node:tls';
import { X509Certificate } from 'node:crypto';
import type { Duplex } from 'node:stream';
import { pinnedCertificates, verifyPeer } from './pinned-ca.js';

type Done = (err: Error | null, socket?: Duplex) => void;

export class PinnedCaAgent extends Agent {
  private readonly pinned: X509Certificate[];

  constructor(
    options: AgentOptions,
    private readonly pem: string,
  ) {
    super(options);
    this.pinned = pinnedCertificates(pem);
  }

  // Node's documented hook: a socket passed to the callback, not returned, is awaited
  override createConnection(options: ConnectionOptions, done: Done): undefined {
    const host = options.servername || options.host || 'localhost';
    const fast = connect({ ...options, ca: [], rejectUnauthorized: false, session: undefined });
    onceSecure(fast, done, () => {
      // one object for both views: in Node 20, getPeerCertificate() after getPeerX509Certificate() answers {}
      const peer = fast.getPeerCertificate();
      const verdict = peer.raw
        ? verifyPeer(new X509Certificate(peer.raw), peer, this.pinned, host)
        : { trusted: 'unsure' as const, why: 'no certificate' };
      if (verdict.trusted === true) return done(null, fast);
      fast.destroy();
      if (verdict.trusted === false) return done(verdict.error);
      // not decided here: Node's own verification, as without this agent
      const checked = connect({ ...options, ca: this.pem, rejectUnauthorized: true, session: undefined });
      onceSecure(checked, done, () => done(null, checked));
    });
    return undefined;
  }
}

function onceSecure(socket: TLSSocket, done: Done, then: () => void): void {
  const fail = (err: Error) => done(err);
  socket.once('error', fail);
  socket.once('secureConnect', () => {
    socket.off('error', fail);
    then();
  });
}
