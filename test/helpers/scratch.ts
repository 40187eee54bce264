// Scratch directories for tests: made under the system's temporary directory and removed
// when the test process exits, after its teardowns have stopped whatever used them (a
// restarted controller still finds its data until then).
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';

const made: string[] = [];
process.once('exit', () => {
  for (const dir of made) {
    try {
      rmSync(dir, { recursive: true, force: true });
    } catch (err) {
      // a leftover directory must not fail the test that made it: say so, and go on
      process.stderr.write(`# could not remove ${dir}: ${(err as Error).message}\n`);
    }
  }
});

/** A new directory `$TMPDIR/PREFIXxxxxxx`, removed when this process exits. */
export function scratchDir(prefix: string): string {
  const dir = mkdtempSync(join(tmpdir(), prefix));
  made.push(dir);
  return dir;
}
