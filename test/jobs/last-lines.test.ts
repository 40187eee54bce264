// The last lines of a rank's stderr that an attempt's first failure quotes: read from the
// real log files the controller stores (written here as an agent's output would leave them).
import t, { type Test } from 'tap';
import { mkdirSync, writeFileSync } from 'node:fs';
import { dirname } from 'node:path';
import { lastLines } from '#controller/jobs/last-lines';
import { LogStore } from '#controller/jobs/log-store';

/** A log store over a fresh directory, with `text` as rank 0's stderr of job `j`. */
function stored(t: Test, text: string | Buffer): LogStore {
  const logs = new LogStore(t.testdir());
  t.teardown(() => logs.closeAll());
  const path = logs.path('j', 0, 'stderr');
  mkdirSync(dirname(path), { recursive: true });
  writeFileSync(path, text);
  return logs;
}

t.test('the last 3 non-empty lines, oldest first', async (t) => {
  const logs = stored(t, 'one\ntwo\n\nthree\nfour\n');
  t.same(lastLines(logs, 'j', 0, 'stderr'), ['two', 'three', 'four']);
  t.same(lastLines(logs, 'j', 0, 'stderr', 1), ['four'], 'or as many as asked for');
});

t.test('a last line without its newline counts', async (t) => {
  t.same(lastLines(stored(t, 'one\ntwo'), 'j', 0, 'stderr'), ['one', 'two']);
});

t.test('CRLF and trailing blanks are not part of a line', async (t) => {
  t.same(lastLines(stored(t, 'one\r\ntwo  \r\nthree\t\r\n'), 'j', 0, 'stderr'), ['one', 'two', 'three']);
});

t.test('an empty stream, or one never written, has no lines', async (t) => {
  t.same(lastLines(stored(t, ''), 'j', 0, 'stderr'), [], 'empty file');
  t.same(lastLines(stored(t, '\n\n  \n'), 'j', 0, 'stderr'), [], 'blank lines only');
  t.same(lastLines(stored(t, 'x'), 'j', 1, 'stderr'), [], 'no file');
});

t.test('a long line is cut at 200 characters', async (t) => {
  const long = 'E'.repeat(1000);
  const [line] = lastLines(stored(t, `${long}\n`), 'j', 0, 'stderr');
  t.equal(line, `${'E'.repeat(199)}…`);
  t.equal(line!.length, 200);
});

t.test('only the tail of a big file is read: its cut first line is not quoted', async (t) => {
  // 10,000 bytes: the 4,096-byte tail starts inside a line of "a"s
  const text = `${'a'.repeat(9_000)}\nsecond\nthird\n`.padStart(10_000, 'x');
  t.same(lastLines(stored(t, text), 'j', 0, 'stderr'), ['second', 'third']);
});

t.test('a tail that starts exactly at a line keeps that line', async (t) => {
  // the 4,096-byte tail is "whole line…\n" in full: the byte before it is a newline
  const whole = `${'w'.repeat(4_000)}\n`;
  const last = `${'z'.repeat(4_096 - whole.length - 1)}\n`;
  const text = `${'before\n'.repeat(100)}${whole}${last}`;
  t.equal(Buffer.byteLength(whole + last), 4_096, 'the last two lines are the tail');
  const lines = lastLines(stored(t, text), 'j', 0, 'stderr');
  t.same(
    lines.map((l) => l[0]),
    ['w', 'z'],
    'the first whole line of the tail is quoted too',
  );
});

t.test('UTF-8 is decoded, a character cut by the tail is not quoted', async (t) => {
  // "é" is 2 bytes: the tail starts in its middle
  const text = Buffer.concat([Buffer.from('é'.repeat(3_000)), Buffer.from('\nRuntimeError: λ failed\n')]);
  t.same(lastLines(stored(t, text), 'j', 0, 'stderr'), ['RuntimeError: λ failed']);
});
