// Small text helpers shared by the views (kept in the protocol package, where the CLI reaches them without TypeBox).
export { columns, gidIpv4, padEnd, padStart } from '@rankd/protocol/text-columns';
