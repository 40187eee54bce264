// What of this shell's environment would distort the figures, measured and then removed.
//
// NODE_EXTRA_CA_CERTS makes every Node process parse a CA bundle at start-up, before
// any code runs: on the machines these figures were first taken on it was set for a
// registry proxy and added ~80 ms to each start, more than a whole `mpirun.openmpi -np 2 true`.
// rankd talks to its controller over plain HTTP on these runs and reads no certificate,
// so the bench unsets it for every process it starts, and says so with the measured cost.
import { MIN_ROUNDS } from './interleave.js';
import { medianProcessMs } from './process-timing.js';

export async function neutralizeEnvironment(log: (s: string) => void): Promise<string[]> {
  const notes: string[] = [];
  const bundle = process.env.NODE_EXTRA_CA_CERTS;
  if (bundle) {
    const nodeStart = [process.execPath, '-e', '0'];
    const withIt = await medianProcessMs(nodeStart, MIN_ROUNDS);
    const env = { ...process.env };
    delete env.NODE_EXTRA_CA_CERTS;
    const without = await medianProcessMs(nodeStart, MIN_ROUNDS, { env });
    delete process.env.NODE_EXTRA_CA_CERTS;
    const note =
      `NODE_EXTRA_CA_CERTS=${bundle} was set in the shell: \`node -e 0\` took ${withIt.toFixed(0)} ms with it and ` +
      `${without.toFixed(0)} ms without (median of ${MIN_ROUNDS}). The bench unset it for every process it started, ` +
      'rankd and peers alike; with it, add the difference to every rankd CLI figure.';
    log(`environment: ${note}`);
    notes.push(note);
  }
  return notes;
}
