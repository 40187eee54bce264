// Which Unix user holds the other end of a loopback TCP connection, from /proc/net/tcp.
//
// Loopback has no useful source address (every local process is 127.0.0.1), so the only
// way to tell one local client from another is the owner of its socket: the kernel lists
// each TCP socket of this network namespace with its local and remote address and the uid
// that created it. The client's socket is the one whose local end is our peer's address.

import { readFileSync } from 'node:fs';
import type { Socket } from 'node:net';
import { endianness } from 'node:os';

const PROC_NET_TCP = '/proc/net/tcp';

/** The uid owning the client end of an accepted IPv4 loopback connection; null when the kernel no longer lists it. */
export function loopbackPeerUid(socket: Socket, table: string = readFileSync(PROC_NET_TCP, 'latin1')): number | null {
  const { remoteAddress, remotePort, localAddress, localPort } = socket;
  if (!remoteAddress || !remotePort || !localAddress || !localPort) return null;
  const clientEnd = procAddress(remoteAddress, remotePort);
  const serverEnd = procAddress(localAddress, localPort);
  if (!clientEnd || !serverEnd) return null;
  for (const line of table.split('\n')) {
    // sl local_address rem_address st tx:rx tr:when retrnsmt uid timeout inode …
    const fields = line.trim().split(/\s+/);
    if (fields[1] === clientEnd && fields[2] === serverEnd) {
      const uid = Number(fields[7]);
      return Number.isSafeInteger(uid) ? uid : null;
    }
  }
  return null;
}

/** An address as /proc/net/tcp prints it: the IPv4 address as a word in host byte order, then the port, in upper-case hex. */
export function procAddress(ip: string, port: number): string | null {
  const v4 = /^(?:::ffff:)?(\d+)\.(\d+)\.(\d+)\.(\d+)$/.exec(ip);
  if (!v4) return null;
  const bytes = v4.slice(1, 5).map(Number);
  const word = (endianness() === 'LE' ? [...bytes].reverse() : bytes)
    .map((b) => b.toString(16).padStart(2, '0'))
    .join('');
  return `${word}:${port.toString(16).padStart(4, '0')}`.toUpperCase();
}
