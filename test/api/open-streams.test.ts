// The open-streams registry on its own: each kind of revocation ends exactly the streams of
// its principal, once, and a dashboard session's streams end at its expiry.
import { pino } from 'pino';
import t from 'tap';
import { OpenStreams, type StreamEnd, type StreamOwner } from '#controller/streams/open-streams';

const logged: string[] = [];
const log = pino({ level: 'error' }, { write: (line: string) => void logged.push(line) });
const owner = (
  accessor: string,
  user: string,
  session: string | null = null,
  expiresAt: number | null = null,
): StreamOwner => ({ accessor, user, session, expiresAt });

function tracked(streams: OpenStreams, o: StreamOwner): { ends: StreamEnd[]; forget: () => void } {
  const ends: StreamEnd[] = [];
  const forget = streams.add(o, (why) => ends.push(why));
  return { ends, forget };
}

t.test('a revoked token, a removed user and a signed-out session end their own streams only', async (t) => {
  const streams = new OpenStreams(log);
  const aliceA = tracked(streams, owner('aaaa', 'alice'));
  const aliceB = tracked(streams, owner('bbbb', 'alice'));
  const aliceSession = tracked(streams, owner('aaaa', 'alice', 'sess1', Date.now() + 3_600_000));
  const bob = tracked(streams, owner('cccc', 'bob'));
  const bobSession = tracked(streams, owner('cccc', 'bob', 'sess2', Date.now() + 3_600_000));
  t.equal(streams.size, 5);

  t.equal(streams.revokeToken('aaaa'), 2, "token aaaa's bearer stream and the session it opened");
  t.same(
    aliceA.ends.map((e) => e.code),
    ['RANKD_CREDENTIAL_REVOKED'],
  );
  t.match(aliceA.ends[0]!.message, /its API token aaaa was revoked/);
  t.equal(aliceSession.ends.length, 1);
  t.equal(aliceB.ends.length, 0, "alice's other token keeps its stream");
  t.equal(streams.revokeToken('aaaa'), 0, 'each stream ends once');

  t.equal(streams.endSession('sess2'), 1);
  t.match(bobSession.ends[0]!.message, /its dashboard session was signed out/);
  t.equal(bob.ends.length, 0, "signing out does not end the token's bearer streams");

  t.equal(streams.removeUser('alice'), 1);
  t.match(aliceB.ends[0]!.message, /its user "alice" was removed/);
  t.equal(bob.ends.length, 0);

  bob.forget();
  t.equal(streams.size, 0, 'a stream that closed by itself is forgotten');
  t.equal(streams.removeUser('bob'), 0);
});

t.test("a dashboard session's streams end when it expires", async (t) => {
  const streams = new OpenStreams(log);
  const expiring = tracked(streams, owner('dddd', 'dora', 'sess3', Date.now() + 50));
  const lasting = tracked(streams, owner('dddd', 'dora'));
  await new Promise((r) => setTimeout(r, 300));
  t.equal(expiring.ends.length, 1);
  t.match(expiring.ends[0]!.message, /its dashboard session expired/);
  t.equal(lasting.ends.length, 0, 'an API token does not expire');
  t.equal(streams.size, 1);
  lasting.forget();
});

t.test('a stream that throws while ending is logged, and the others still end', async (t) => {
  const streams = new OpenStreams(log);
  streams.add(owner('eeee', 'erin'), () => {
    throw new Error('socket gone');
  });
  const other = tracked(streams, owner('eeee', 'erin'));
  t.equal(streams.revokeToken('eeee'), 2);
  t.equal(other.ends.length, 1);
  t.match(logged.at(-1), /an open stream failed to end on revocation/);
  t.equal(streams.size, 0);
});
