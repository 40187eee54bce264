// --audit-file-size takes a size: a number of bytes, or k/M/G (powers of 1024), with or
// without "iB"; anything else is refused with a message naming the value.
import t from 'tap';
import { byteSize } from '#cli/options';

t.test('sizes', async (t) => {
  t.equal(byteSize('4096'), 4096);
  t.equal(byteSize('4k'), 4096);
  t.equal(byteSize('64MiB'), 64 * 1024 * 1024);
  t.equal(byteSize('1G'), 1024 ** 3);
  t.equal(byteSize('500 kb'), 500 * 1024);
  for (const bad of ['0', '-1', '1.5M', '64 MB extra', 'lots', '', '9T'])
    t.throws(
      () => byteSize(bad),
      { message: `"${bad}" is not a size (e.g. 64MiB, 500k, 1G)` },
      `${JSON.stringify(bad)} is refused`,
    );
});
