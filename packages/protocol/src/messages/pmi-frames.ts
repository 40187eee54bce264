// Encoders of the controller's PMI answers. A fence's merged puts go to every node of the
// job, and a pulled chunk to every node that asks for it: their JSON is made once
// (EncodedPmiPairs) and each frame joins it to its small typed head, instead of encoding
// the same pairs again per node. test/protocol/pmi-frames.test.ts checks the frames
// against the schemas.
import type { PmiChunk, PmiFenced, PmiPairs } from './pmi.js';

/** PMI pairs encoded as JSON once, for the many frames that carry the same ones. */
export class EncodedPmiPairs {
  readonly json: string;

  constructor(pairs: PmiPairs) {
    this.json = JSON.stringify(pairs);
  }
}

const NO_PAIRS = new EncodedPmiPairs([]);

/** `pmi.fenced`: the puts inline (`pairs`), or none and the count of chunks to pull. */
export function encodePmiFenced(head: Omit<PmiFenced, 'pairs'>, pairs: EncodedPmiPairs | null): Buffer {
  return pairs ? withPairs(head, pairs) : Buffer.from(JSON.stringify(head));
}

/** `pmi.chunk`: chunk `chunk` of an epoch's merged puts, or no pairs and the `error` that says why. */
export function encodePmiChunk(head: Omit<PmiChunk, 'pairs'>, pairs: EncodedPmiPairs | null): Buffer {
  return withPairs(head, pairs ?? NO_PAIRS);
}

/** The head's JSON with `"pairs"` as its last member. */
function withPairs(head: object, pairs: EncodedPmiPairs): Buffer {
  const json = JSON.stringify(head);
  return Buffer.from(`${json.slice(0, -1)},"pairs":${pairs.json}}`);
}
