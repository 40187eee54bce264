// Running pinned ranks on a node: the agent side of jobs.
export * from './rank-spec.js';
export { RankErrorCode } from './errors.js';
export { RankRunner, type RankRunnerOptions } from './rank-runner.js';
export { rankEnv } from './preflight.js';
export { RankOutput, DEFAULT_CHUNK_BYTES, type OutputChunk, type ReadOptions, type FollowOptions } from './output.js';
export { verifyBinding, judgeBinding, type BindingPlan } from './binding.js';
export { pinning, type Pinning } from './preflight.js';
export {
  findSupervisor,
  describeSupervisor,
  defaultSupervisorPath,
  type SupervisorBinary,
} from './supervisor-binary.js';
export { detectCgroupBase, ownCgroupDir, type CgroupMode } from './cgroup.js';
export { Spool } from './spool.js';
