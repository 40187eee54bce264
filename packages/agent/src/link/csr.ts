// The node's key and certificate signing request (PKCS#10, RFC 2986), built with node:crypto.
//
// Why not @peculiar/x509, which the controller uses: it brings ~250 modules (asn1 schemas,
// tsyringe, reflect-metadata) that stay in the agent's heap and resident memory for its
// whole life, for one fixed structure written at enrollment and at each
// renewal. The request is always the same shape: an ECDSA P-256 key, a subject of one CN,
// no attributes, signed with ecdsa-with-SHA256; the controller parses and verifies it with
// @peculiar/x509.
import { generateKeyPairSync, sign } from 'node:crypto';

/** DER: tag, definite length, contents. */
function tlv(tag: number, ...contents: Buffer[]): Buffer {
  const body = Buffer.concat(contents);
  const n = body.length;
  let length: Buffer;
  if (n < 0x80) length = Buffer.from([n]);
  else {
    const bytes: number[] = [];
    for (let rest = n; rest > 0; rest >>= 8) bytes.unshift(rest & 0xff);
    length = Buffer.from([0x80 | bytes.length, ...bytes]);
  }
  return Buffer.concat([Buffer.from([tag]), length, body]);
}

const SEQUENCE = 0x30;
const SET = 0x31;
const INTEGER = 0x02;
const BIT_STRING = 0x03;
const UTF8_STRING = 0x0c;
const CONTEXT_0 = 0xa0;
/** 2.5.4.3 (commonName) and 1.2.840.10045.4.3.2 (ecdsa-with-SHA256), encoded. */
const OID_COMMON_NAME = Buffer.from([0x06, 0x03, 0x55, 0x04, 0x03]);
const OID_ECDSA_WITH_SHA256 = Buffer.from([0x06, 0x08, 0x2a, 0x86, 0x48, 0xce, 0x3d, 0x04, 0x03, 0x02]);

function pem(label: string, der: Buffer): string {
  return `-----BEGIN ${label}-----\n${der
    .toString('base64')
    .match(/.{1,64}/g)!
    .join('\n')}\n-----END ${label}-----\n`;
}

/** Generates a P-256 key and a CSR naming the node (subject CN=name). */
export async function keyAndCsr(name: string): Promise<{ key: string; csr: string }> {
  const { privateKey, publicKey } = generateKeyPairSync('ec', { namedCurve: 'P-256' });
  const subject = tlv(SEQUENCE, tlv(SET, tlv(SEQUENCE, OID_COMMON_NAME, tlv(UTF8_STRING, Buffer.from(name, 'utf8')))));
  const info = tlv(
    SEQUENCE,
    tlv(INTEGER, Buffer.from([0])), // version 1
    subject,
    publicKey.export({ type: 'spki', format: 'der' }),
    tlv(CONTEXT_0), // no attributes
  );
  // node:crypto signs ECDSA as a DER Ecdsa-Sig-Value, what the signature BIT STRING holds
  const signature = sign('sha256', info, privateKey);
  const request = tlv(
    SEQUENCE,
    info,
    tlv(SEQUENCE, OID_ECDSA_WITH_SHA256),
    tlv(BIT_STRING, Buffer.from([0]), signature),
  );
  return {
    key: privateKey.export({ type: 'pkcs8', format: 'pem' }) as string,
    csr: pem('CERTIFICATE REQUEST', request),
  };
}
