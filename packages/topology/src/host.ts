// Host identity: hostname, kernel, OS and architecture.
//
// Under a captured root, the kernel's own files answer (/proc/sys/kernel/*,
// /etc/os-release) and hwloc's /proc/hwloc-nofile-info stands in for uname. The live
// system may fall back to os.hostname()/os.machine(), which read no files.
import { hostname as osHostname, machine } from 'node:os';
import type { Facts } from '@rankd/protocol';
import type { Sysfs } from './sysfs.js';

export function readHost(sys: Sysfs, live: boolean): Facts['host'] {
  const nofile = sys.text('/proc/hwloc-nofile-info', { optional: true });
  const fromNofile = (key: string): string | null => {
    const m = nofile ? new RegExp(`^${key}:\\s*(.+)$`, 'm').exec(nofile) : null;
    return m ? m[1]!.trim() : null;
  };
  const hostname =
    sys.text('/proc/sys/kernel/hostname', { optional: true }) ||
    sys.text('/etc/hostname', { optional: true })?.split('\n')[0] ||
    fromNofile('HostName') ||
    (live ? osHostname() : null);
  const kernel = sys.text('/proc/sys/kernel/osrelease', { optional: true }) || fromNofile('OSRelease');
  return {
    hostname: hostname || null,
    kernel: kernel || null,
    os: osName(sys),
    arch: fromNofile('Architecture') ?? (live ? machine() : null),
  };
}

function osName(sys: Sysfs): string | null {
  const text = sys.text('/etc/os-release', { optional: true }) ?? sys.text('/usr/lib/os-release', { optional: true });
  if (text === null) return null;
  const pretty = /^PRETTY_NAME=(.*)$/m.exec(text) ?? /^NAME=(.*)$/m.exec(text);
  return pretty ? pretty[1]!.trim().replace(/^["']|["']$/g, '') || null : null;
}
