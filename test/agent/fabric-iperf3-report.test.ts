// parseIperf3 on what iperf3 really prints: a report of a real `iperf3 -c … --bidir -J` run
// on loopback, captured here, and iperf3's own error report when nothing listens.
import t from 'tap';
import { spawn, spawnSync } from 'node:child_process';
import net from 'node:net';
import { UnparsableOutput, parseIperf3 } from '#agent/fabric/tools';
import { isListening } from '#agent/fabric/listening';
import { waitUntil } from '../helpers/daemons.js';

const LO = '127.0.0.1';

async function freePort(): Promise<number> {
  const s = net.createServer();
  await new Promise<void>((resolve) => s.listen(0, LO, resolve));
  const { port } = s.address() as net.AddressInfo;
  await new Promise((r) => s.close(r));
  return port;
}

interface Sum {
  bits_per_second: number;
}
interface Report {
  end: {
    sum_sent: Sum;
    sum_received: Sum;
    sum_sent_bidir_reverse: Sum;
    sum_received_bidir_reverse: Sum;
    streams: Array<{ sender: { sender: boolean; min_rtt?: number } }>;
  };
}

t.test('a real --bidir report: each direction as its receiver counted it, and half the smallest rtt', async (t) => {
  const port = await freePort();
  const server = spawn('iperf3', ['-s', '-1', '-B', LO, '-p', String(port)], { stdio: 'ignore' });
  const serverExit = new Promise((r) => server.once('exit', r));
  t.teardown(async () => {
    server.kill('SIGKILL');
    await serverExit;
  });
  await waitUntil('iperf3 -s to listen', 5000, () => isListening(port));
  const client = spawnSync('iperf3', ['-c', LO, '-p', String(port), '-t', '1', '--bidir', '-J'], {
    encoding: 'utf8',
    timeout: 30_000,
  });
  t.equal(client.status, 0, `iperf3 ran: ${client.stderr}`);
  const report = JSON.parse(client.stdout) as Report;
  const m = parseIperf3(client.stdout);
  // iperf3's --bidir report: sum_received is what the server received of the client's
  // streams, sum_received_bidir_reverse what the client received of the server's
  t.equal(m.forwardBps, report.end.sum_received.bits_per_second, 'forward: what the server received');
  t.equal(m.reverseBps, report.end.sum_received_bidir_reverse.bits_per_second, 'reverse: what the client received');
  t.ok(m.forwardBps! > 0 && m.reverseBps! > 0, `both directions carried data: ${m.forwardBps}, ${m.reverseBps}`);
  t.not(m.forwardBps, m.reverseBps, 'two separate figures, not one copied');
  t.ok(m.forwardBps! <= report.end.sum_sent.bits_per_second * 1.01, 'no more received than the client sent');
  const rtts = report.end.streams.filter((s) => s.sender.sender).map((s) => s.sender.min_rtt!);
  t.ok(rtts.length > 0 && rtts.every((r) => r > 0), 'the client-sent stream has a kernel min_rtt');
  t.equal(m.latencyUs, Math.min(...rtts) / 2, 'latency: half the smallest round trip of the client-sent streams');
});

t.test("iperf3's own error report is UnparsableOutput with iperf3's words", async (t) => {
  const port = await freePort(); // closed again: nothing listens
  const client = spawnSync('iperf3', ['-c', LO, '-p', String(port), '-t', '1', '--bidir', '-J'], {
    encoding: 'utf8',
    timeout: 30_000,
  });
  // iperf3 3.12 exits 0 here with -J: the report's error field is the only sign of failure
  const error = (JSON.parse(client.stdout) as { error: string }).error;
  t.match(error, /unable to connect/, 'iperf3 says why in its JSON');
  t.throws(() => parseIperf3(client.stdout), new UnparsableOutput(`iperf3: ${error}`));
});

t.test('output that is not a report is UnparsableOutput', async (t) => {
  t.throws(() => parseIperf3(''), new UnparsableOutput('iperf3 printed no JSON report'));
  t.throws(() => parseIperf3('{"start": {'), new UnparsableOutput('iperf3 printed no JSON report'), 'a killed run');
  t.throws(
    () => parseIperf3(JSON.stringify({ end: { sum_received: { bits_per_second: 1 } } })),
    new UnparsableOutput('iperf3 report has no received totals for both directions'),
    'a run without --bidir has no reverse total',
  );
});
