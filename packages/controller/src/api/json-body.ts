// The JSON body parser of every route: fastify's own (secure-json-parse, prototype poisoning
// refused), behind a depth check.
//
// secure-json-parse does not bound nesting, and 1 MiB of `[[[…]]]` costs it about 0.3 s of
// the one event loop that also carries the agents' heartbeats. A single pass over the text,
// counting brackets outside strings, refuses anything nested deeper than MAX_JSON_DEPTH before
// the parser sees it. No request rankd accepts nests deeper than a handful of levels.
import { ErrorCode, RankdError } from '@rankd/protocol';
import type { FastifyInstance } from 'fastify';

/** Arrays and objects nested deeper than this are refused with RANKD_JSON_TOO_DEEP. */
export const MAX_JSON_DEPTH = 32;

const OPEN_ARRAY = 0x5b;
const CLOSE_ARRAY = 0x5d;
const OPEN_OBJECT = 0x7b;
const CLOSE_OBJECT = 0x7d;
const QUOTE = 0x22;
const BACKSLASH = 0x5c;

/** The deepest nesting of `text` once it passes `limit`, else null. Malformed text is left to the parser. */
export function depthOver(text: string, limit: number): number | null {
  let depth = 0;
  let inString = false;
  for (let i = 0; i < text.length; i++) {
    const c = text.charCodeAt(i);
    if (inString) {
      if (c === BACKSLASH) i++;
      else if (c === QUOTE) inString = false;
    } else if (c === QUOTE) inString = true;
    else if (c === OPEN_ARRAY || c === OPEN_OBJECT) {
      if (++depth > limit) return depth;
    } else if (c === CLOSE_ARRAY || c === CLOSE_OBJECT) depth--;
  }
  return null;
}

export function installJsonParser(app: FastifyInstance, maxDepth = MAX_JSON_DEPTH): void {
  const parse = app.getDefaultJsonParser('error', 'error');
  app.removeContentTypeParser('application/json');
  app.addContentTypeParser('application/json', { parseAs: 'string' }, (request, body, done) => {
    const text = body as string;
    if (depthOver(text, maxDepth) !== null) {
      done(
        new RankdError(
          ErrorCode.JsonTooDeep,
          `the JSON body nests arrays or objects deeper than ${maxDepth} levels; no rankd request does`,
        ),
        undefined,
      );
      return;
    }
    void parse(request, text, done);
  });
}
