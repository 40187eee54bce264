#!/usr/bin/env node
// The entry of `rankd` (the bin shim, `npm start`, the systemd units and the tests run
// this file). It runs the CLI's bundle, a build output of `npm run build`
// (scripts/bundle-cli.mjs: dist/bundle/, one chunk per command, less start-up than
// loading some 100 compiled modules one by one). RANKD_DEV=1 runs the compiled modules
// (./cli.js) instead: the development switch, for a tree compiled with a bare `tsc -b` and
// not bundled since. Neither is ever mixed with the other, and nothing guesses which is
// newer: without the switch, what the last `npm run build` made is what runs.
const bundle = new URL('./bundle/rankd.js', import.meta.url);

if (process.env.RANKD_DEV === '1') {
  await import('./cli.js');
} else {
  try {
    await import(bundle.href);
  } catch (err) {
    // "Cannot find module '<bundle>'": not bundled. A module missing further down names the
    // bundle only as its importer, unquoted, and is reported as it is.
    const e = err as NodeJS.ErrnoException;
    const named = `'${decodeURIComponent(bundle.pathname)}'`;
    const missing = e?.code === 'ERR_MODULE_NOT_FOUND' && String(e.message).includes(named);
    if (!missing) throw err;
    process.stderr.write(
      'rankd: the CLI is not bundled: run `npm run build` (RANKD_DEV=1 runs the compiled modules)\n',
    );
    process.exitCode = 70; // ExitCode.Software: a local failure
  }
}
