// Heartbeat times live in their own narrow table (node_seen): a flush of 2,000 heartbeats
// must not rewrite 2,000 rows that hold facts. What the registry reads back after a restart
// is the later of the last heartbeat and the last connect.
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import t from 'tap';
import { openDatabase } from '#controller/store/database';
import { NodesRepo } from '#controller/store/nodes-repo';

t.test('heartbeats are written to node_seen, and read back as the later of heartbeat and connect', async (t) => {
  const dir = mkdtempSync(join(tmpdir(), 'rankd-node-seen-'));
  t.teardown(() => rmSync(dir, { recursive: true, force: true }));
  const db = openDatabase(dir);
  t.teardown(() => db.close());
  const repo = new NodesRepo(db);
  const node = {
    name: 'n1',
    labels: {},
    address: '10.0.0.1',
    version: '1',
    capabilities: [],
    firstSeen: 100,
    lastSeen: 100,
    state: 'ready' as const,
    stateReason: '',
    facts: null,
    factsHash: null,
    drain: null,
  };
  repo.upsert(node);
  t.equal(repo.all()[0]!.lastSeen, 100, 'a node never heard of since its connect: the connect time');

  const before = (db.prepare("SELECT rowid FROM nodes WHERE name = 'n1'").get() as { rowid: number }).rowid;
  repo.touchMany([['n1', 500]]);
  t.equal(repo.all()[0]!.lastSeen, 500, 'a heartbeat moves it on');
  const nodesRow = db.prepare("SELECT last_seen, rowid FROM nodes WHERE name = 'n1'").get() as {
    last_seen: number;
    rowid: number;
  };
  t.same(nodesRow, { last_seen: 100, rowid: before }, 'the heartbeat left the nodes row (and its facts) alone');
  t.same(db.prepare('SELECT * FROM node_seen').all(), [{ name: 'n1', last_seen: 500 }], 'it went to node_seen');

  repo.upsert({ ...node, lastSeen: 900 });
  t.equal(repo.all()[0]!.lastSeen, 900, 'a later reconnect wins over an older heartbeat');
});
