// Golden frames, valid and invalid, for the PMI exchange messages (pmi.*).
// test/protocol/messages.test.ts runs them with the others.
import { AgentMessages, ControllerMessages, type MessageMap } from '@rankd/protocol';

export interface PmiGolden {
  map: MessageMap;
  frame: unknown;
  error?: string;
}

const INVALID = 'RANKD_INVALID_MESSAGE';
const UNKNOWN = 'RANKD_UNKNOWN_TYPE';
const card: [string, string] = ['-allgather-shm-1-0', 'a'.repeat(400)];
const fence = { type: 'pmi.fence', jobId: 'j1', epoch: 0, part: 0, pairs: [card] };

export const pmiGolden: Record<string, PmiGolden[]> = {
  'pmi.fence': [
    { map: AgentMessages, frame: fence },
    { map: AgentMessages, frame: { ...fence, pairs: [], more: true, part: 3, epoch: 2 } },
    { map: AgentMessages, frame: { ...fence, pairs: [['', 'v']] }, error: INVALID },
    { map: AgentMessages, frame: { ...fence, pairs: [['k'.repeat(65), 'v']] }, error: INVALID },
    { map: AgentMessages, frame: { ...fence, pairs: [['k', 'v'.repeat(1025)]] }, error: INVALID },
    { map: AgentMessages, frame: { ...fence, pairs: [['k', 'v', 'extra']] }, error: INVALID },
    { map: AgentMessages, frame: { ...fence, epoch: -1 }, error: INVALID },
    { map: AgentMessages, frame: { type: 'pmi.fence', jobId: 'j1', epoch: 0, pairs: [] }, error: INVALID },
    { map: ControllerMessages, frame: fence, error: UNKNOWN },
  ],
  'pmi.fenced': [
    { map: ControllerMessages, frame: { type: 'pmi.fenced', jobId: 'j1', epoch: 0, chunks: 0, pairs: [card] } },
    { map: ControllerMessages, frame: { type: 'pmi.fenced', jobId: 'j1', epoch: 1, chunks: 25 } },
    { map: ControllerMessages, frame: { type: 'pmi.fenced', jobId: 'j1', epoch: 1 }, error: INVALID },
    { map: AgentMessages, frame: { type: 'pmi.fenced', jobId: 'j1', epoch: 1, chunks: 0 }, error: UNKNOWN },
  ],
  'pmi.fetch': [
    { map: AgentMessages, frame: { type: 'pmi.fetch', id: 'pmi-1', jobId: 'j1', epoch: 1, chunk: 0 } },
    {
      map: AgentMessages,
      frame: { type: 'pmi.fetch', id: 'pmi-1', jobId: 'j1', epoch: 1, chunk: 70000 },
      error: INVALID,
    },
  ],
  'pmi.chunk': [
    {
      map: ControllerMessages,
      frame: { type: 'pmi.chunk', id: 'pmi-1', jobId: 'j1', epoch: 1, chunk: 0, pairs: [card] },
    },
    {
      map: ControllerMessages,
      frame: {
        type: 'pmi.chunk',
        id: 'pmi-1',
        jobId: 'j1',
        epoch: 1,
        chunk: 9,
        pairs: [],
        error: 'no chunk 9 of fence 1 of job j1',
      },
    },
    { map: ControllerMessages, frame: { type: 'pmi.chunk', jobId: 'j1', epoch: 1, chunk: 0 }, error: INVALID },
  ],
  'pmi.failed': [
    {
      map: AgentMessages,
      frame: { type: 'pmi.failed', jobId: 'j1', rank: 1, exitCode: 42, reason: 'rank 1 called MPI_Abort' },
    },
    {
      map: AgentMessages,
      frame: { type: 'pmi.failed', jobId: 'j1', rank: 1, exitCode: null, reason: 'closed before finalize' },
    },
    {
      map: AgentMessages,
      frame: { type: 'pmi.failed', jobId: 'j1', rank: 1, exitCode: 256, reason: 'x' },
      error: INVALID,
    },
    {
      map: AgentMessages,
      frame: { type: 'pmi.failed', jobId: 'j1', rank: -1, exitCode: 1, reason: 'x' },
      error: INVALID,
    },
  ],
};
