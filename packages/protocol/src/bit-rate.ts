// Link speeds as people write them: decimal units of bits per second, as iperf3, perftest
// and switch datasheets print them ("9.41 Gbit/s"). TypeBox-free, for the CLI and the dashboard.

const UNITS = ['bit/s', 'kbit/s', 'Mbit/s', 'Gbit/s', 'Tbit/s'];

export function formatBitRate(bps: number): string {
  let value = bps;
  let unit = 0;
  while (Math.abs(value) >= 1000 && unit < UNITS.length - 1) {
    value /= 1000;
    unit++;
  }
  const digits = value >= 100 ? 0 : value >= 10 ? 1 : 2;
  return `${value.toFixed(digits)} ${UNITS[unit]}`;
}

/** Microseconds, or milliseconds past 1,000 µs. */
export function formatLatency(us: number): string {
  return us >= 1000 ? `${(us / 1000).toFixed(us >= 10_000 ? 0 : 1)} ms` : `${us.toFixed(us >= 100 ? 0 : 1)} µs`;
}
