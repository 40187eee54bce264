// A rank map's JSON, made once per map.
//
// The rank map is most of a big job's bytes (2,000 nodes × 8 ranks: some 9 MB of JSON), and
// a submit needs the same object serialized twice in a row: for the store, when the job
// starts, and for the answer to POST /v1/jobs. The string is kept beside the map for as long as the
// map lives (a live job's record holds it), so the second use is free.
import type { JobView, RankMap } from '@rankd/protocol';

const made = new WeakMap<RankMap, string>();

export function rankMapJson(map: RankMap): string {
  let json = made.get(map);
  if (json === undefined) {
    json = JSON.stringify(map);
    made.set(map, json);
  }
  return json;
}

/** A job view as JSON, its rank map from rankMapJson (written last: key order means nothing in JSON). */
export function jobViewJson(view: JobView): string {
  if (!view.rankMap) return JSON.stringify(view);
  const { rankMap, ...rest } = view;
  return `${JSON.stringify(rest).slice(0, -1)},"rankMap":${rankMapJson(rankMap)}}`;
}
