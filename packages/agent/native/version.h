/*
 * The rank supervisor's contract version: the one place it is written. The C prints it
 * (`rank-supervisor --version` answers "rank-supervisor N"), scripts/build-native.mjs
 * checks a fresh build against it, and the agent (ranks/supervisor-binary.ts) reads this
 * file to tell a binary of other sources from a current one; `rankd doctor` shows it per
 * node. Raise it with every change of the contract (argv layout, records, modes).
 */
#define RS_VERSION 4
