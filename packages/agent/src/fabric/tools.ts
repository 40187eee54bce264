// The probe programs and their argv, built here from typed fields only (the controller sends
// a tool name from a closed list, an IP literal, ports, a device name, a GID index and whole
// seconds; the schema has checked each), and the parsers of what they print.
//
// iperf3 runs --bidir, so one run of `durationS` measures both directions of a link.
// perftest's ib_write_bw runs -b (bidirectional) for the same reason; ib_write_lat runs a
// fixed number of iterations after it, on the same pair.
import type { FabricTool } from '@rankd/protocol';

export interface ToolParameters {
  tool: FabricTool;
  device?: string | undefined;
  gidIndex?: number | undefined;
  durationS: number;
}

/** The Debian package each tool comes from, for the fix in a missing tool's message. */
export const TOOL_PACKAGE: Readonly<Record<FabricTool, string>> = {
  iperf3: 'iperf3',
  ib_write_bw: 'perftest',
  ib_write_lat: 'perftest',
};

/** ib_write_lat iterations: about a second of 2-byte writes on any RDMA fabric. */
const LAT_ITERATIONS = 10_000;

function rdmaArgs(p: ToolParameters): string[] {
  const args: string[] = [];
  if (p.device !== undefined) args.push('-d', p.device);
  if (p.gidIndex !== undefined) args.push('-x', String(p.gidIndex));
  return args;
}

/** argv[1..] of the serving side, listening on `address`:`port`. */
export function serverArgs(p: ToolParameters, address: string, port: number): string[] {
  switch (p.tool) {
    case 'iperf3':
      // -1: one client, then exit; --forceflush: the banner reaches a pipe at once
      return ['-s', '-1', '-B', address, '-p', String(port), '--forceflush'];
    case 'ib_write_bw':
      return [...rdmaArgs(p), '-p', String(port), '-b', '-D', String(p.durationS), '--report_gbits'];
    case 'ib_write_lat':
      return [...rdmaArgs(p), '-p', String(port), '-n', String(LAT_ITERATIONS)];
  }
}

/** argv[1..] of the measuring side, against the server at `address`:`port`. */
export function clientArgs(p: ToolParameters, address: string, port: number, bind?: string): string[] {
  switch (p.tool) {
    case 'iperf3':
      return [
        '-c',
        address,
        '-p',
        String(port),
        '-t',
        String(p.durationS),
        '--bidir',
        '-J',
        ...(bind === undefined ? [] : ['-B', bind]),
      ];
    case 'ib_write_bw':
      return [...rdmaArgs(p), '-p', String(port), '-b', '-D', String(p.durationS), '--report_gbits', address];
    case 'ib_write_lat':
      return [...rdmaArgs(p), '-p', String(port), '-n', String(LAT_ITERATIONS), address];
  }
}

export interface Measurement {
  forwardBps: number | null;
  reverseBps: number | null;
  latencyUs: number | null;
}

/** Why a tool's output holds no measurement. */
export class UnparsableOutput extends Error {}

export function parseMeasurement(tool: FabricTool, stdout: string): Measurement {
  switch (tool) {
    case 'iperf3':
      return parseIperf3(stdout);
    case 'ib_write_bw':
      return parseWriteBw(stdout);
    case 'ib_write_lat':
      return parseWriteLat(stdout);
  }
}

interface Iperf3Sum {
  bits_per_second?: number;
}
interface Iperf3Report {
  error?: string;
  end?: {
    sum_received?: Iperf3Sum;
    sum_received_bidir_reverse?: Iperf3Sum;
    streams?: Array<{ sender?: { sender?: boolean; min_rtt?: number } }>;
  };
}

/**
 * iperf3 -J --bidir: sum_received is what the server received (client → server),
 * sum_received_bidir_reverse what the client received (server → client). min_rtt (µs) is
 * the smallest round trip the kernel measured on the client's sending stream.
 */
export function parseIperf3(stdout: string): Measurement {
  let report: Iperf3Report;
  try {
    report = JSON.parse(stdout) as Iperf3Report;
  } catch {
    throw new UnparsableOutput('iperf3 printed no JSON report');
  }
  if (typeof report.error === 'string') throw new UnparsableOutput(`iperf3: ${report.error}`);
  const forward = report.end?.sum_received?.bits_per_second;
  const reverse = report.end?.sum_received_bidir_reverse?.bits_per_second;
  if (typeof forward !== 'number' || typeof reverse !== 'number')
    throw new UnparsableOutput('iperf3 report has no received totals for both directions');
  const rtts = (report.end?.streams ?? [])
    .map((s) => s.sender)
    .filter((s) => s?.sender === true && typeof s.min_rtt === 'number' && s.min_rtt > 0)
    .map((s) => s!.min_rtt!);
  const latencyUs = rtts.length > 0 ? Math.min(...rtts) / 2 : null;
  return { forwardBps: forward, reverseBps: reverse, latencyUs };
}

/**
 * ib_write_bw --report_gbits -b: the result row is
 * ` #bytes  #iterations  BW peak[Gb/sec]  BW average[Gb/sec]  MsgRate[Mpps]`; with -b the
 * average is the sum of both directions, so each direction gets half.
 */
export function parseWriteBw(stdout: string): Measurement {
  const header = stdout.split('\n').findIndex((l) => /#bytes\s+#iterations\s+BW peak/.test(l));
  if (header < 0) throw new UnparsableOutput('ib_write_bw printed no result table');
  const row = stdout
    .split('\n')
    .slice(header + 1)
    .map((l) => l.trim().split(/\s+/))
    .find((cols) => cols.length >= 4 && /^\d+$/.test(cols[0]!));
  const average = row ? Number(row[3]) : NaN;
  if (!Number.isFinite(average)) throw new UnparsableOutput('ib_write_bw printed no average bandwidth');
  const each = (average * 1e9) / 2;
  return { forwardBps: each, reverseBps: each, latencyUs: null };
}

/**
 * ib_write_lat: the result row is ` #bytes #iterations t_min[usec] t_max[usec] t_typical[usec]
 * t_avg[usec] …`; t_typical is the latency perftest itself reports as typical.
 */
export function parseWriteLat(stdout: string): Measurement {
  const lines = stdout.split('\n');
  const header = lines.findIndex((l) => /#bytes\s+#iterations\s+t_min/.test(l));
  if (header < 0) throw new UnparsableOutput('ib_write_lat printed no result table');
  const row = lines
    .slice(header + 1)
    .map((l) => l.trim().split(/\s+/))
    .find((cols) => cols.length >= 5 && /^\d+$/.test(cols[0]!));
  const typical = row ? Number(row[4]) : NaN;
  if (!Number.isFinite(typical)) throw new UnparsableOutput('ib_write_lat printed no typical latency');
  return { forwardBps: null, reverseBps: null, latencyUs: typical };
}
