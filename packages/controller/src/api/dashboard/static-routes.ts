// The dashboard's files, built into packages/dashboard/dist at npm install, served at /ui/.
//
// Built files carry a content hash in their names and are cached for good; index.html is
// revalidated every time so a new build is picked up at once. esbuild's build writes .gz and
// .br beside each file, served to browsers that accept them. The CSP allows this origin only:
// nothing is fetched from anywhere else, inline scripts never run.
import { existsSync } from 'node:fs';
import { fileURLToPath } from 'node:url';
import type { FastifyInstance } from 'fastify';
import staticFiles from '@fastify/static';

/** Where the dashboard is built, beside this package in the checkout and in what deploy/install.sh copies. */
export const DASHBOARD_DIST = fileURLToPath(new URL('../../../../dashboard/dist/', import.meta.url));

const HASHED = /-[A-Z0-9]{8}\.(js|css)(\.gz|\.br)?$/;
const SECURITY_HEADERS: Record<string, string> = {
  'content-security-policy':
    "default-src 'self'; script-src 'self'; style-src 'self'; img-src 'self' data:; connect-src 'self'; frame-ancestors 'none'; base-uri 'none'; form-action 'self'",
  'x-content-type-options': 'nosniff',
  'referrer-policy': 'no-referrer',
};

export async function dashboardFiles(app: FastifyInstance, opts: { root?: string }): Promise<void> {
  const root = opts.root ?? DASHBOARD_DIST;
  app.get('/', { schema: { hide: true } }, async (_request, reply) => reply.redirect('/ui/'));
  // the page's relative asset paths need the slash, as a directory's URL does
  app.get('/ui', { schema: { hide: true } }, async (request, reply) => reply.redirect(`/ui/${queryOf(request.url)}`));
  if (!existsSync(`${root}/index.html`)) {
    // a checkout built without its dashboard (tsc -b alone): say how to get it
    app.get('/ui/*', { schema: { hide: true } }, async (_request, reply) =>
      reply
        .code(503)
        .type('text/plain')
        .send(`the dashboard is not built (no ${root}index.html): run "npm run build" in the rankd checkout\n`),
    );
    return;
  }
  await app.register(staticFiles, {
    root,
    prefix: '/ui/',
    preCompressed: true,
    // hashed names change with their content; index.html must be asked again every time
    cacheControl: false,
    setHeaders(res, path) {
      res.setHeader('cache-control', HASHED.test(path) ? 'public, max-age=31536000, immutable' : 'no-cache');
      for (const [name, value] of Object.entries(SECURITY_HEADERS)) res.setHeader(name, value);
    },
  });
}

/** "?a=b" of a URL, or "". */
function queryOf(url: string): string {
  const q = url.indexOf('?');
  return q < 0 ? '' : url.slice(q);
}
