// The `rankd` that npm links is a committed shim, so that the link's target exists when
// npm links it (before `prepare` builds dist/). Both package.json files must name it.
import { execFile } from 'node:child_process';
import { accessSync, constants, readFileSync } from 'node:fs';
import { join } from 'node:path';
import { promisify } from 'node:util';
import t from 'tap';

const ROOT = join(import.meta.dirname, '../..');
const SHIM = 'packages/cli/bin/rankd.js';
const run = promisify(execFile);

const binOf = (packageJson: string) =>
  (JSON.parse(readFileSync(join(ROOT, packageJson), 'utf8')) as { bin: Record<string, string> }).bin['rankd'];

t.test('the root and the cli package both link rankd to the shim', async (t) => {
  t.equal(binOf('package.json'), SHIM);
  t.equal(join('packages/cli', binOf('packages/cli/package.json') ?? ''), SHIM);
});

t.test('the shim is executable, starts with a shebang, and runs the CLI with its arguments', async (t) => {
  const path = join(ROOT, SHIM);
  t.doesNotThrow(() => accessSync(path, constants.X_OK), 'executable');
  t.match(readFileSync(path, 'utf8'), /^#!\/usr\/bin\/env node\n/);
  const { stdout } = await run(path, ['version']);
  t.match(stdout, /^rankd \d+\.\d+\.\d+ /);
});
