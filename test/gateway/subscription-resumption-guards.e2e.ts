import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { buildSchema, type FormattedExecutionResult } from 'graphql';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createHitCounter } from '../../gateway/src/rate-limits.js';
import { startSubscriptionServer } from '../../gateway/src/subscriptions/server.js';
import { SESSIONS_ENDED, type SessionsEnded } from '../../platform/contracts/events.js';
import type { Principal } from '../../platform/contracts/principal.js';
import { InProcessBus, type BusEvent } from '../../platform/messaging/event-bus.js';
import { createLogger } from '../../platform/runtime/logger.js';
import { accepted, firstError, openConnection, type RawConnection } from '../support/graphql-ws.js';

// Three guards of the subscription engine, on the gateway's subscription server over real sockets
// and streams, with the gateway's execution and credentials replaced (as in subscription-groups.e2e.ts):
// an id sent again while its first subscribe is being admitted, a session that ends under a running
// stream, and SSE's Last-Event-ID against an `after` written in the request.
const SCHEMA = buildSchema(`
  type Card { SvcCardId: ID! status: String }
  type Query { card(SvcCardId: ID!): Card }
  type Subscription { cardStatusChanged(after: String): Card }
`);
const QUERY = 'subscription { cardStatusChanged { SvcCardId status } }';
const RESUMING = 'subscription Cards($after: String) { cardStatusChanged(after: $after) { SvcCardId status } }';

/** A result as the engine writes it, on any transport. */
interface Result {
  data?: { cardStatusChanged: { SvcCardId: string; status: string } } | null;
  errors?: Array<{ message: string; extensions?: { code?: string } }>;
  extensions?: { position?: string; replayed?: boolean; caughtUp?: { replayed: number } };
}

/** One Server-Sent Event as the gateway writes it. */
interface SseEvent {
  id: string | null;
  event: string;
  data: string;
}

/** An SSE response read as it arrives. */
interface SseStream {
  status: number;
  events: SseEvent[];
  /** Whether the body has ended (the gateway ended it, or the test aborted it). */
  ended: boolean;
  abort(): void;
}

const sleep = (ms: number) => new Promise<void>((resolve) => setTimeout(resolve, ms));

/** Waits until `check` holds; fails after five seconds. */
const until = async (check: () => boolean, what: string) => {
  const deadline = Date.now() + 5000;
  while (!check()) {
    if (Date.now() > deadline) throw new Error(`timed out waiting for ${what}`);
    await sleep(20);
  }
};

/** Opens an SSE stream with a GET, as a browser's EventSource does, and collects its events. */
async function openSse(url: string, headers: Record<string, string>): Promise<SseStream> {
  const controller = new AbortController();
  const response = await fetch(url, { headers: { accept: 'text/event-stream', ...headers }, signal: controller.signal });
  const stream: SseStream = { status: response.status, events: [], ended: false, abort: () => controller.abort() };
  const body = response.body as ReadableStream<Uint8Array> | null;
  void (async () => {
    if (!body) {
      stream.ended = true;
      return;
    }
    const reader = body.getReader();
    const decoder = new TextDecoder();
    let buffer = '';
    try {
      for (;;) {
        const { value, done } = await reader.read();
        if (done) break;
        buffer += decoder.decode(value, { stream: true });
        for (let at = buffer.indexOf('\n\n'); at >= 0; at = buffer.indexOf('\n\n')) {
          const block = buffer.slice(0, at);
          buffer = buffer.slice(at + 2);
          const field = (name: string) =>
            block
              .split('\n')
              .find((line) => line.startsWith(`${name}:`))
              ?.slice(name.length + 1)
              .trimStart() ?? null;
          // A heartbeat is a comment (`:`), not an event.
          const event = field('event');
          if (event !== null) stream.events.push({ id: field('id'), event, data: field('data') ?? '' });
        }
      }
    } catch {
      // Aborted by the test.
    }
    stream.ended = true;
  })();
  return stream;
}

/** The results of an SSE stream's `next` events. */
const results = (stream: SseStream): Result[] =>
  stream.events.filter((event) => event.event === 'next').map((event) => JSON.parse(event.data) as Result);

describe('the guards of subscription resumption and admission', () => {
  let server: Server;
  let httpUrl: string;
  let wsUrl: string;
  const bus = new InProcessBus();
  const counter = createHitCounter(undefined, '', createLogger('silent'));
  let subscriptions: ReturnType<typeof startSubscriptionServer>;
  /** Sessions the user subgraph no longer answers for. */
  const endedSessions = new Set<string>();
  /** While set, the credentials of tokens ending in `:held` are checked only once it resolves. */
  let held: Promise<void> | null = null;
  let heldChecks = 0;
  const connections: RawConnection[] = [];
  const streams: SseStream[] = [];

  beforeAll(async () => {
    server = createServer();
    await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
    const port = (server.address() as AddressInfo).port;
    httpUrl = `http://127.0.0.1:${port}/graphql`;
    wsUrl = `ws://127.0.0.1:${port}/graphql`;
    subscriptions = startSubscriptionServer({
      server,
      path: '/graphql',
      schema: () => SCHEMA,
      bus,
      // `token: <user>:<session>`; a session that ended is refused.
      authenticate: async (headers) => {
        const [userId = '', sessionId = ''] = (headers.token ?? '').split(':');
        if (held && sessionId === 'held') {
          heldChecks += 1;
          await held;
        }
        if (endedSessions.has(sessionId)) throw new Error('The session has ended.');
        return { kind: 'user', userId, sessionId, channel: 'internet' } satisfies Principal;
      },
      execute: async (_document, variables): Promise<FormattedExecutionResult> => ({
        data: { cardStatusChanged: { SvcCardId: variables.__eventKey, status: 'blocked' } },
      }),
      logger: createLogger('silent'),
      maxPayloadBytes: 1024 * 1024,
      bodyLimitBytes: 1024 * 1024,
      documentLimits: { maxBytes: 64 * 1024, maxTokens: 5000 },
      limits: {
        connectionsPerPrincipal: 100,
        connectionsPerAddress: 100,
        // Small, so that a place never given back shows: a fresh connection could not hold three.
        subscriptionsPerPrincipal: 3,
        subscribesPerConnection: 100,
        subscribesPerPrincipal: 100,
        windowSeconds: 60,
      },
      counter,
      clientAddress: (request) => request.socket.remoteAddress ?? null,
    });
    server.on('request', (req, res) => {
      void subscriptions.serveStream(req, res).then((served) => {
        if (!served) res.writeHead(404).end();
      });
    });
  });
  afterAll(async () => {
    for (const stream of streams) stream.abort();
    for (const connection of connections) await connection.close();
    await subscriptions.close();
    await counter.close();
    await bus.close();
    // The streams' keep-alive sockets would hold the close for seconds.
    server.closeAllConnections();
    await new Promise<void>((resolve) => server.close(() => resolve()));
  });

  let published = 0;
  /** Publishes a status change of `SvcCardId` for `SvcUserId`; resolves with its position in the log. */
  const publishCard = async (SvcUserId: string, SvcCardId: string): Promise<string> => {
    published += 1;
    await bus.publish({
      id: `evt_guards_${published}`,
      type: 'card.status',
      audience: { SvcUserId },
      payload: { SvcCardId },
      dtsCreated: new Date().toISOString(),
    } satisfies BusEvent);
    return bus.position()!;
  };
  const connect = async (token: string) => {
    const connection = accepted(await openConnection(wsUrl, { token }));
    connections.push(connection);
    return connection;
  };
  const sse = async (query: string, variables: Record<string, unknown>, headers: Record<string, string>) => {
    const stream = await openSse(
      `${httpUrl}?query=${encodeURIComponent(query)}&variables=${encodeURIComponent(JSON.stringify(variables))}`,
      headers,
    );
    streams.push(stream);
    return stream;
  };
  /** The cards of the events a graphql-ws subscription received (its `next` frames with data). */
  const cardsOf = (connection: RawConnection, id: string) =>
    connection.frames
      .filter((frame) => frame.id === id && frame.type === 'next')
      .flatMap((frame) => {
        const card = (frame.payload as Result).data?.cardStatusChanged.SvcCardId;
        return card === undefined ? [] : [card];
      });

  it('refuses an id sent again while its first subscribe is being admitted, and the connection and its other subscriptions go on', async () => {
    const connection = await connect('gus:held');
    const before = subscriptions.subscribers();
    connection.subscribe('other', QUERY);
    await until(() => subscriptions.subscribers() === before + 1, 'the other subscription');
    // The first subscribe waits in its admission (the credentials checked again), is completed, and its id sent again.
    let release!: () => void;
    held = new Promise<void>((resolve) => (release = resolve));
    connection.subscribe('reused', QUERY);
    await until(() => heldChecks === 1, 'the first admission');
    connection.complete('reused');
    connection.subscribe('reused', QUERY);
    await until(() => heldChecks === 2, 'the second admission');
    held = null;
    release();
    // The subscribe sent again is answered with an `error` message.
    const refused = () => connection.frames.find((frame) => frame.id === 'reused' && frame.type === 'error');
    await until(() => refused() !== undefined, 'the refusal');
    const refusal = firstError(refused()!);
    expect(refusal.extensions?.code).toBe('BAD_REQUEST');
    expect(refusal.message).toBe('A subscription with the id "reused" is being started already.');
    // The connection stays open (an id in use would have closed it: 4409) and its other subscription receives events;
    // the subscribe the client completed delivers none.
    await publishCard('gus', 'gus_card_1');
    await until(() => cardsOf(connection, 'other').length === 1, 'the event on the other subscription');
    expect(cardsOf(connection, 'other')).toEqual(['gus_card_1']);
    expect(cardsOf(connection, 'reused')).toEqual([]);
    expect(connection.socket.readyState).toBe(connection.socket.OPEN);
    // The id is free again once refused: sent again, it starts and receives events.
    connection.subscribe('reused', QUERY);
    await until(() => subscriptions.subscribers() === before + 2, 'the subscription with the id sent again');
    await publishCard('gus', 'gus_card_2');
    await until(() => cardsOf(connection, 'reused').length === 1, 'the event on the id sent again');
    expect(cardsOf(connection, 'reused')).toEqual(['gus_card_2']);
    expect(cardsOf(connection, 'other')).toEqual(['gus_card_1', 'gus_card_2']);
    // Every place was given back: closed, the user's next connection holds the three a principal may.
    await connection.close();
    await until(() => subscriptions.subscribers() === before, 'the places given back');
    const next = await connect('gus:gus_2');
    for (const id of ['a', 'b', 'c']) next.subscribe(id, QUERY);
    await until(
      () => subscriptions.subscribers() === before + 3 || next.frames.some((frame) => frame.type === 'error'),
      'three subscriptions',
    );
    expect(next.frames.filter((frame) => frame.type === 'error')).toEqual([]);
  });

  it('ends a running SSE stream whose session ends (sessions.ended on the bus) with UNAUTHENTICATED and complete, and sends it no later event', async () => {
    const before = subscriptions.subscribers();
    const ending = await sse(QUERY, {}, { token: 'ann:ann_1' });
    // Another session of the same user: the events go on for it.
    const witness = await sse(QUERY, {}, { token: 'ann:ann_2' });
    expect([ending.status, witness.status]).toEqual([200, 200]);
    await until(() => subscriptions.subscribers() === before + 2, 'both streams');
    await publishCard('ann', 'ann_card_1');
    await until(() => results(ending).length === 1 && results(witness).length === 1, 'the event before the session ends');
    expect(results(ending)[0]?.data?.cardStatusChanged.SvcCardId).toBe('ann_card_1');

    endedSessions.add('ann_1');
    await bus.publish({
      id: 'evt_guards_session_ann_1_ended',
      type: SESSIONS_ENDED,
      // As the user subgraph announces it: for no audience but the gateways.
      audience: {},
      payload: { sessionId: 'ann_1' } satisfies SessionsEnded,
      dtsCreated: new Date().toISOString(),
    } satisfies BusEvent);
    // The stream's last result is the error, then `complete`, then the gateway ends the body.
    await until(() => ending.ended, 'the end of the stream');
    expect(ending.events.map((event) => event.event)).toEqual(['next', 'next', 'complete']);
    const last = results(ending)[1]!;
    expect(last.data).toBeUndefined();
    expect(last.errors).toEqual([{ message: 'The session has ended.', extensions: { code: 'UNAUTHENTICATED' } }]);
    // Without a position: it is no event of the log, so it is nothing to resume from.
    expect(ending.events[1]?.id).toBeNull();
    await until(() => subscriptions.subscribers() === before + 1, 'the ended stream released');

    // An event after the end reaches the other session, not the ended one.
    await publishCard('ann', 'ann_card_2');
    await until(() => results(witness).length === 2, 'the event after the session ended');
    expect(results(witness).map((result) => result.data?.cardStatusChanged.SvcCardId)).toEqual(['ann_card_1', 'ann_card_2']);
    await sleep(200);
    expect(ending.events).toHaveLength(3);
  });

  it("resumes an SSE stream after its Last-Event-ID, not after an older `after` in the URL's variables", async () => {
    const positions: string[] = [];
    for (const card of ['lea_card_1', 'lea_card_2', 'lea_card_3', 'lea_card_4']) positions.push(await publishCard('lea', card));
    const [first, , third, fourth] = positions as [string, string, string, string];
    /** Reads a resumed stream until it says it caught up; its replayed cards and caught-up count. */
    const resumed = async (headers: Record<string, string>) => {
      const stream = await sse(RESUMING, { after: first }, { token: 'lea:lea_1', ...headers });
      expect(stream.status).toBe(200);
      await until(() => results(stream).some((result) => result.extensions?.caughtUp !== undefined), 'the caught-up result');
      stream.abort();
      const next = stream.events
        .filter((event) => event.event === 'next')
        .map((event) => ({ id: event.id, result: JSON.parse(event.data) as Result }));
      const caughtUp = next.findIndex(({ result }) => result.extensions?.caughtUp !== undefined);
      const replayed = next.slice(0, caughtUp);
      return {
        cards: replayed.map(({ result }) => result.data?.cardStatusChanged.SvcCardId),
        ids: replayed.map(({ id }) => id),
        flags: replayed.map(({ result }) => result.extensions?.replayed),
        caughtUp: next[caughtUp]?.result.extensions?.caughtUp,
      };
    };
    // The URL's `after` alone is honoured: everything after the first event.
    expect(await resumed({})).toMatchObject({ cards: ['lea_card_2', 'lea_card_3', 'lea_card_4'], caughtUp: { replayed: 3 } });
    // With a Last-Event-ID (a browser's EventSource reconnecting to the same URL), only what followed it.
    const afterHeader = await resumed({ 'last-event-id': third });
    expect(afterHeader).toEqual({ cards: ['lea_card_4'], ids: [fourth], flags: [true], caughtUp: { replayed: 1 } });
  });
});
