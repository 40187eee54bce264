#!/usr/bin/env node
// The entry of `rankd` (the bin shim, `npm start`, the systemd units and the tests run
// this file). It runs the CLI from the bundle that `npm run build` makes of it
// (scripts/bundle-cli.mjs: dist/bundle/, one chunk per command, ~40 ms less start-up than
// loading some 100 compiled modules one by one), unless a compile ran after the bundle was
// made: then the bundle holds old code, and the compiled modules (./cli.js) are run
// instead. Neither is ever mixed with the other.
import { statSync } from 'node:fs';

const bundle = new URL('./bundle/rankd.js', import.meta.url);

/** The compiles the bundle is made from: this package's and those of the packages it bundles. */
const COMPILES = ['./.tsbuildinfo', '../../protocol/dist/.tsbuildinfo', '../../agent/dist/.tsbuildinfo', '../../controller/dist/.tsbuildinfo'];

function bundleIsCurrent(): boolean {
  const made = statSync(bundle, { throwIfNoEntry: false })?.mtimeMs;
  if (made === undefined) return false;
  // a missing build info (an installed copy without it) cannot be newer than the bundle
  return COMPILES.every((file) => (statSync(new URL(file, import.meta.url), { throwIfNoEntry: false })?.mtimeMs ?? 0) <= made);
}

await (bundleIsCurrent() ? import(bundle.href) : import('./cli.js'));
