#!/usr/bin/env node
// Copies the programs fabric checks run on the nodes (checks/: `rankd check allreduce`'s
// launcher and its MPI benchmark's C source) into dist/checks/, where the controller names
// them in the jobs it builds, and deploy/install.sh copies them with the rest of dist.
// They are copied, not built: the benchmark is built on each node, at run time, with that
// node's MPICH (checks/allreduce-check.sh).
import fs from 'node:fs';
import path from 'node:path';
import { fileURLToPath } from 'node:url';

const pkg = path.dirname(path.dirname(fileURLToPath(import.meta.url)));
const from = path.join(pkg, 'checks');
const to = path.join(pkg, 'dist/checks');

fs.mkdirSync(to, { recursive: true });
for (const name of fs.readdirSync(from).sort()) {
  // written beside the target and renamed: a rank reading the old file never sees half a new one
  const tmp = path.join(to, `.${name}.${process.pid}.tmp`);
  fs.copyFileSync(path.join(from, name), tmp);
  // the ranks run as the job's user: world-readable, as the rest of an installed dist
  fs.chmodSync(tmp, 0o644);
  fs.renameSync(tmp, path.join(to, name));
}
console.log(`rankd: copied the check programs: ${path.relative(process.cwd(), to) || to}`);
