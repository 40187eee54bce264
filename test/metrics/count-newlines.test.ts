// rankd_log_lines_total counts newlines four bytes at a time: the same count as a plain
// byte loop at every alignment and length, with the bytes that differ from '\n' by one bit.
import t from 'tap';
import { countNewlines } from '#controller/jobs/count-newlines';
import { LogStore } from '#controller/jobs/log-store';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';

const byByte = (chunk: Uint8Array) => chunk.reduce((n, b) => n + (b === 10 ? 1 : 0), 0);

t.test('the count of a byte loop, at every offset and length', async (t) => {
  // '\n' and its near misses: a high bit set (0x8a), a low bit flipped (0x0b, 0x0e), zero, 0xff
  const alphabet = [0x0a, 0x8a, 0x0b, 0x0e, 0x00, 0xff, 0x41];
  const backing = Buffer.alloc(256 + 8);
  let seed = 1;
  const random = () => (seed = (seed * 1103515245 + 12345) & 0x7fffffff) / 0x80000000;
  let checked = 0;
  for (let round = 0; round < 200; round++) {
    for (let i = 0; i < backing.length; i++) backing[i] = alphabet[Math.floor(random() * alphabet.length)]!;
    for (let offset = 0; offset < 8; offset++) {
      for (const length of [0, 1, 2, 3, 4, 5, 7, 8, 9, 31, 64, 255]) {
        const chunk = backing.subarray(offset, offset + length);
        if (countNewlines(chunk) !== byByte(chunk))
          t.fail(`offset ${offset}, length ${length}: ${chunk.toString('hex')}`);
        checked++;
      }
    }
  }
  t.pass(`${checked} chunks counted alike`);
  t.equal(countNewlines(Buffer.from('\n'.repeat(1000))), 1000, 'nothing but newlines');
  t.equal(countNewlines(Buffer.from('a'.repeat(1000))), 0, 'none');
});

t.test('the log store counts the bytes and lines it stores, each once', async (t) => {
  const dir = mkdtempSync(join(tmpdir(), 'rankd-lines-'));
  t.teardown(() => rmSync(dir, { recursive: true, force: true }));
  const store = new LogStore(dir);
  t.teardown(() => store.closeAll());
  store.open('j1', 0);
  store.append('j1', 0, 'stdout', 0, Buffer.from('one\ntwo\n'));
  store.append('j1', 0, 'stdout', 4, Buffer.from('two\nthree\nfour')); // a resend overlapping what is stored
  store.append('j1', 0, 'stdout', 0, Buffer.from('one\n')); // a duplicate
  store.append('j1', 0, 'stderr', 0, Buffer.from('oops\n'));
  t.same(
    store.ingested('stdout'),
    { bytes: 18, lines: 3 },
    "stdout: 'one\\ntwo\\nthree\\nfour', the last line not yet ended",
  );
  t.same(store.ingested('stderr'), { bytes: 5, lines: 1 });
});
