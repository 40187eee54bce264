// Whether a TCP port is in LISTEN state on this host, from /proc/net/tcp and tcp6. A probe
// server is ready when its port listens: iperf3 and perftest print their banners at
// different times (perftest prints nothing before a client comes), and a test connection
// would use up iperf3's one client.
import fs from 'node:fs/promises';

const TCP_LISTEN = '0A';

export async function isListening(port: number): Promise<boolean> {
  const hex = port.toString(16).toUpperCase().padStart(4, '0');
  for (const table of ['/proc/net/tcp', '/proc/net/tcp6']) {
    let text: string;
    try {
      text = await fs.readFile(table, 'utf8');
    } catch {
      continue; // no IPv6 on this kernel
    }
    for (const line of text.split('\n')) {
      // "  0: 0100007F:14B3 00000000:0000 0A …": local address:port, remote, state
      const cols = line.trim().split(/\s+/);
      if (cols[3] === TCP_LISTEN && cols[1]?.endsWith(`:${hex}`)) return true;
    }
  }
  return false;
}
