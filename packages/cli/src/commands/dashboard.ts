// `rankd dashboard`: a one-time login URL for the web dashboard, as `jupyter notebook` prints
// one. The URL signs one browser in once, within five minutes; the browser then holds a
// session cookie, never the token. --open hands it to the desktop's browser.
import { spawn } from 'node:child_process';
import type { Command } from 'commander';
import { loadClientConfig } from '../client/config.js';
import { call } from '../client/rest.js';

export function register(program: Command): void {
  program
    .command('dashboard')
    .description('print a one-time login URL for the web dashboard (good for one sign-in within 5 minutes)')
    .option('--open', "open it in this desktop's browser (xdg-open, or open on macOS)")
    .action(async (opts: { open?: boolean }) => {
      const config = loadClientConfig();
      const login = await call(config, 'POST /v1/dashboard/login-codes');
      const url = new URL(login.path, config.url).toString();
      process.stdout.write(`${url}\n`);
      process.stderr.write(
        `one sign-in, until ${new Date(login.expiresAt).toLocaleTimeString()}; the controller's certificate is signed by the rankd CA${config.ca ? ` (${config.ca})` : ''}, which the browser must trust\n`,
      );
      if (opts.open) openInBrowser(url);
    });
}

function openInBrowser(url: string): void {
  const opener = process.platform === 'darwin' ? 'open' : 'xdg-open';
  // argv, no shell: the URL is one argument whatever it holds
  const child = spawn(opener, [url], { stdio: 'ignore', detached: true });
  child.on('error', (err) =>
    process.stderr.write(`could not run ${opener} (${err.message}): open the URL above yourself\n`),
  );
  child.unref();
}
