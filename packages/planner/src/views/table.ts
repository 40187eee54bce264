// The human view (`--format table`): one renderer, shared with `rankd run`'s header, in the
// schema-free protocol module.
export { renderRankMapTable as renderTable } from '@rankd/protocol/rank-map-table';
