import t from 'tap';
import { AgentMessages, decodeFrame } from '@rankd/protocol';
t.test('decode', async (t) => {
  t.equal(decodeFrame('{"type":"heartbeat","seq":1}', AgentMessages).ok, true);
});
