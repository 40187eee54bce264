// The probe programs and their argv, built here from typed fields only (the controller sends
// a tool name from a closed list, an IP literal, ports, a device name, a port number, a GID
// index and whole seconds; the schema has checked each), and the parsers of what they print.
//
// iperf3 runs --bidir, so one run of `durationS` measures both directions of a link.
// perftest's ib_write_bw runs -b (bidirectional) for the same reason; ib_write_lat runs a
// fixed number of iterations after it, on the same pair.
//
// What perftest does with these flags was read in its source (linux-rdma/perftest, tag
// v4.5-0.17, the Debian 12 package; the format strings are unchanged at the 2026 master):
// src/perftest_parameters.c parses the options and prints the result rows,
// src/perftest_parameters.h holds the row formats, src/write_bw.c and src/write_lat.c print
// the tables, src/perftest_communication.c opens the TCP connection the two sides exchange
// their queue-pair details over.
import type { FabricTool } from '@rankd/protocol';

export interface ToolParameters {
  tool: FabricTool;
  device?: string | undefined;
  gidIndex?: number | undefined;
  ibPort?: number | undefined;
  durationS: number;
}

/** The Debian package each tool comes from, for the fix in a missing tool's message. */
export const TOOL_PACKAGE: Readonly<Record<FabricTool, string>> = {
  iperf3: 'iperf3',
  ib_write_bw: 'perftest',
  ib_write_lat: 'perftest',
};

/**
 * ib_write_lat iterations: about a second of 2-byte writes on any RDMA fabric. perftest takes
 * 5 to 100,000,000 (-n), and both sides must run the same count: the test is a ping-pong,
 * and a side that expects more replies than the other sends waits until it is killed.
 */
const LAT_ITERATIONS = 10_000;

/**
 * The options both perftest sides need, and must agree on: perftest exchanges no test
 * parameters between server and client, only queue-pair details.
 * - -d: the device; without it perftest takes the first device it finds.
 * - -i: the port; perftest's default is port 1 whatever is active.
 * - -x: the GID index, given on RoCE only. On an InfiniBand port perftest routes by LID
 *   without a GID unless -x is given; on an Ethernet port without -x it picks a GID of its
 *   own, which need not be the one NCCL (and the planner) picks. perftest accepts 0 to 64.
 * - -p: the TCP port of the connection the two sides exchange their details over. The server
 *   listens on every IPv4 address: its bind option is `--source_ip` up to perftest 4.5 and
 *   `--bind_source_ip` from 23.07 on, where `--source_ip` means a raw-Ethernet option
 *   instead, so no spelling is right for every installed version.
 */
function rdmaArgs(p: ToolParameters, port: number): string[] {
  const args: string[] = [];
  if (p.device !== undefined) args.push('-d', p.device);
  if (p.ibPort !== undefined) args.push('-i', String(p.ibPort));
  if (p.gidIndex !== undefined) args.push('-x', String(p.gidIndex));
  args.push('-p', String(port));
  return args;
}

/**
 * ib_write_bw's test options, the same on both sides.
 * - -b: both sides write at once; each then prints the sum of what both sent.
 * - -D: a timed run. perftest allows it with -b (it refuses -D only with -a, events and
 *   the latency-under-load test); it measures between a margin of D/4 s (rounded down) at
 *   either end, so a 1 s run measures all of its second.
 * - --report_gbits: rows in Gbit/s (10^9 bits) instead of MiB/s.
 * - --report-both: after the sum, the client prints its own ("Local") and its peer's
 *   ("Remote") rate, so the two directions are told apart instead of halving the sum.
 */
function writeBwArgs(p: ToolParameters, port: number): string[] {
  return [...rdmaArgs(p, port), '-b', '-D', String(p.durationS), '--report_gbits', '--report-both'];
}

/** argv[1..] of the serving side, listening on `address`:`port`. */
export function serverArgs(p: ToolParameters, address: string, port: number): string[] {
  switch (p.tool) {
    case 'iperf3':
      // -1: one client, then exit; --forceflush: the banner reaches a pipe at once
      return ['-s', '-1', '-B', address, '-p', String(port), '--forceflush'];
    case 'ib_write_bw':
      return writeBwArgs(p, port);
    case 'ib_write_lat':
      return [...rdmaArgs(p, port), '-n', String(LAT_ITERATIONS)];
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
    // perftest's TCP exchange is IPv4 unless told otherwise, and it takes the server last;
    // `bind` is not passed (see rdmaArgs): the kernel's route picks the source
    case 'ib_write_bw':
      return [...writeBwArgs(p, port), address];
    case 'ib_write_lat':
      return [...rdmaArgs(p, port), '-n', String(LAT_ITERATIONS), address];
  }
}

export interface Measurement {
  forwardBps: number | null;
  reverseBps: number | null;
  latencyUs: number | null;
}

/**
 * What a server prints when its port is taken: iperf3 "Address already in use"; perftest
 * "Couldn't listen to port N" when bind() fails (src/perftest_communication.c).
 */
export const PORT_TAKEN = /in use|Couldn't listen to port/i;

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
 * ib_write_bw -b --report_gbits --report-both on the client. Each table is a header line
 * ` #bytes     #iterations    BW peak[Gb/sec]    BW average[Gb/sec]   MsgRate[Mpps]` and one
 * row of those five numbers. The first table's row is the sum of both sides (each side
 * counts what it wrote); the tables after " Local results:" and " Remote results:" hold
 * the client's own rate (client → server) and the server's (server → client). A rate
 * under 0.1 Gbit/s is printed with six decimals instead of two; in a -D run the peak
 * column is 0.00, as -D turns the peak off.
 */
export function parseWriteBw(stdout: string): Measurement {
  const lines = stdout.split('\n');
  const header = /#bytes\s+#iterations\s+BW peak\[Gb\/sec\]\s+BW average\[Gb\/sec\]/;
  if (!lines.some((l) => header.test(l))) throw new UnparsableOutput('ib_write_bw printed no result table');
  const tables = resultRows(lines, header);
  if (tables.length === 0) throw new UnparsableOutput('ib_write_bw printed its table header but no result row');
  const local = sectionRow(lines, tables, 'Local results:');
  const remote = sectionRow(lines, tables, 'Remote results:');
  if (local === undefined || remote === undefined)
    throw new UnparsableOutput('ib_write_bw printed no local and remote results (--report-both)');
  const forward = gbits(local.cols[3]);
  const reverse = gbits(remote.cols[3]);
  if (forward === null || reverse === null) throw new UnparsableOutput('ib_write_bw printed no average bandwidth');
  return { forwardBps: forward, reverseBps: reverse, latencyUs: null };
}

/**
 * ib_write_lat -n N: a header line ` #bytes #iterations    t_min[usec]    t_max[usec]
 * t_typical[usec]    t_avg[usec]    t_stdev[usec]   99% percentile[usec]   99.9% percentile[usec]`
 * and one row of those nine numbers. Each sample is half a round trip of the ping-pong, so
 * t_typical (the median sample) is a one-way latency.
 */
export function parseWriteLat(stdout: string): Measurement {
  const lines = stdout.split('\n');
  const header = /#bytes\s+#iterations\s+t_min\[usec\]\s+t_max\[usec\]\s+t_typical\[usec\]/;
  if (!lines.some((l) => header.test(l))) throw new UnparsableOutput('ib_write_lat printed no result table');
  const [table] = resultRows(lines, header);
  if (table === undefined) throw new UnparsableOutput('ib_write_lat printed its table header but no result row');
  const typical = table.cols.length >= 5 ? Number(table.cols[4]) : NaN;
  if (!Number.isFinite(typical) || typical < 0) throw new UnparsableOutput('ib_write_lat printed no typical latency');
  return { forwardBps: null, reverseBps: null, latencyUs: typical };
}

interface ResultRow {
  /** The index of the header line the row follows. */
  header: number;
  cols: string[];
}

/** The first row of numbers after each header line matching `header`, up to the next rule or header. */
function resultRows(lines: readonly string[], header: RegExp): ResultRow[] {
  const rows: ResultRow[] = [];
  lines.forEach((line, i) => {
    if (!header.test(line)) return;
    for (const next of lines.slice(i + 1)) {
      if (/^-{10,}\s*$/.test(next) || header.test(next)) return;
      const cols = next.trim().split(/\s+/);
      if (/^\d+$/.test(cols[0]!) && cols.slice(1).every((c) => /^\d+(\.\d+)?$/.test(c))) {
        rows.push({ header: i, cols });
        return;
      }
    }
  });
  return rows;
}

/** The row of the first table after the line that names `section`. */
function sectionRow(lines: readonly string[], rows: readonly ResultRow[], section: string): ResultRow | undefined {
  const at = lines.findIndex((l) => l.trim() === section);
  return at < 0 ? undefined : rows.find((r) => r.header > at);
}

function gbits(text: string | undefined): number | null {
  const value = Number(text);
  return text !== undefined && Number.isFinite(value) && value >= 0 ? value * 1e9 : null;
}
