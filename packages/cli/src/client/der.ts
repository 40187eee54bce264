// The few fields of an X.509 certificate (DER) that node:crypto's X509Certificate does not
// expose in Node 20 and pinned-ca.ts needs: the signature algorithm, which extensions are
// critical, and the key usage bits. A reader of definite-length DER only (certificates are
// DER by definition); a certificate it cannot read throws, and the caller treats that as
// a certificate it cannot vouch for.

interface Tlv {
  tag: number;
  /** First byte of the contents, and one past the last. */
  start: number;
  end: number;
}

function readTlv(der: Buffer, at: number, limit: number): Tlv {
  if (at + 2 > limit) throw new Error('DER: truncated');
  const tag = der[at]!;
  let length = der[at + 1]!;
  let start = at + 2;
  if (length & 0x80) {
    const bytes = length & 0x7f;
    if (bytes === 0 || bytes > 4) throw new Error('DER: unsupported length');
    length = 0;
    for (let k = 0; k < bytes; k++) length = length * 256 + der[start++]!;
  }
  if (start + length > limit) throw new Error('DER: truncated');
  return { tag, start, end: start + length };
}

function children(der: Buffer, parent: Tlv): Tlv[] {
  const out: Tlv[] = [];
  for (let at = parent.start; at < parent.end;) {
    const child = readTlv(der, at, parent.end);
    out.push(child);
    at = child.end;
  }
  return out;
}

function oidText(der: Buffer, t: Tlv): string {
  if (t.tag !== 0x06 || t.end === t.start) throw new Error('DER: expected an OID');
  const first = der[t.start]!;
  const arcs = [Math.min(2, Math.floor(first / 40)), first - Math.min(2, Math.floor(first / 40)) * 40];
  let value = 0;
  for (let at = t.start + 1; at < t.end; at++) {
    value = value * 128 + (der[at]! & 0x7f);
    if (!(der[at]! & 0x80)) {
      arcs.push(value);
      value = 0;
    }
  }
  return arcs.join('.');
}

interface Extension {
  oid: string;
  critical: boolean;
  value: Tlv;
}

function parts(der: Buffer): { tbs: Tlv[]; signatureAlgorithm: string } {
  const certificate = readTlv(der, 0, der.length);
  const [tbs, algorithm] = children(der, certificate);
  if (!tbs || !algorithm) throw new Error('DER: not a certificate');
  return { tbs: children(der, tbs), signatureAlgorithm: oidText(der, children(der, algorithm)[0]!) };
}

function extensions(der: Buffer): Extension[] {
  const wrapper = parts(der).tbs.find((t) => t.tag === 0xa3); // [3] EXPLICIT Extensions
  if (!wrapper) return [];
  const list = children(der, wrapper)[0];
  if (!list) return [];
  return children(der, list).map((ext) => {
    const [oid, second, third] = children(der, ext);
    const critical = second?.tag === 0x01 && der[second.start] !== 0;
    const value = second?.tag === 0x04 ? second : third;
    if (!oid || !value) throw new Error('DER: malformed extension');
    return { oid: oidText(der, oid), critical, value };
  });
}

/** The OID of the algorithm the issuer signed the certificate with. */
export function signatureAlgorithm(der: Buffer): string {
  return parts(der).signatureAlgorithm;
}

/** The OIDs of the certificate's critical extensions. */
export function criticalExtensions(der: Buffer): string[] {
  return extensions(der)
    .filter((e) => e.critical)
    .map((e) => e.oid);
}

/** Whether the certificate has the extension. */
export function hasExtension(der: Buffer, oid: string): boolean {
  return extensions(der).some((e) => e.oid === oid);
}

/** The first byte of the key usage bits (digitalSignature = 0x80 … keyCertSign = 0x04), or undefined without the extension. */
export function keyUsageBits(der: Buffer): number | undefined {
  const ext = extensions(der).find((e) => e.oid === '2.5.29.15');
  if (!ext) return undefined;
  const bits = readTlv(der, ext.value.start, ext.value.end);
  if (bits.tag !== 0x03) throw new Error('DER: key usage is not a BIT STRING');
  return bits.end - bits.start > 1 ? der[bits.start + 1]! : 0;
}
