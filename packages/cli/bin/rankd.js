#!/usr/bin/env node
// The `rankd` command that npm links (node_modules/.bin/rankd, npm link, npm install -g).
// A committed file rather than dist/main.js itself: npm links a workspace's bins before
// `prepare` builds it, and skips a bin whose file does not exist yet.
const main = new URL('../dist/main.js', import.meta.url);
try {
  await import(main.href);
} catch (err) {
  // "Cannot find module '<main>' imported from …": the CLI is not built. A module missing
  // further down names main.js only as its importer, unquoted, and is reported as it is.
  if (err?.code !== 'ERR_MODULE_NOT_FOUND' || !String(err.message).includes(`'${decodeURIComponent(main.pathname)}'`))
    throw err;
  process.stderr.write('rankd: the CLI is not built yet: run `npm run build` in the repository\n');
  process.exitCode = 70; // ExitCode.Software: a local failure
}
