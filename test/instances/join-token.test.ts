// The join token a controller derives from its join secret, across a restart on the same data
// directory: kept with its count of uses, and never silently shadowed by another token's row.
import Database from 'better-sqlite3';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import t from 'tap';
import { deriveJoinMaterial } from '#protocol/join-secret';
import { runCli, startController } from '../helpers/daemons.js';

const SECRET = 'join-token-restart-secret-' + 'j'.repeat(20);

t.test('a restart keeps the derived token; a row of another token under its id is refused', async (t) => {
  const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'rankd-join-token-'));
  t.teardown(() => fs.rmSync(dir, { recursive: true, force: true }));
  const secretFile = path.join(dir, 'secret');
  fs.writeFileSync(secretFile, SECRET, { mode: 0o600 });
  const dataDir = path.join(dir, 'data');
  const { joinTokenId } = deriveJoinMaterial(SECRET);
  const extra = ['--join-secret-file', secretFile, '--join-secret-uses', '3'];

  const first = await startController({ dataDir, extra });
  await first.stop();
  const again = await startController({ dataDir, extra });
  const tokens = await again.api<{ tokens: Array<{ id: string; maxUses: number }> }>('/v1/join-tokens');
  t.same(
    tokens.body.tokens.filter((k) => k.id === joinTokenId).map((k) => k.maxUses),
    [3],
    'one row, kept across the restart',
  );
  await again.stop();

  // what a token that happened to get the same id would leave: its own secret's hash
  const db = new Database(path.join(dataDir, 'rankd.db'));
  db.prepare("UPDATE join_tokens SET secret_hash = 'another token' WHERE id = ?").run(joinTokenId);
  db.close();
  const refused = await runCli(['controller', '--listen', '127.0.0.1:0', '--data-dir', dataDir, ...extra]);
  t.equal(refused.code, 64, refused.stderr);
  t.match(refused.stderr, new RegExp(`join token ${joinTokenId} in this data directory is not the join secret's`));
  t.match(refused.stderr, /RANKD_JOIN_SECRET_MISMATCH/);
});
