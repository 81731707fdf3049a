import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { buildSchema, type FormattedExecutionResult } from 'graphql';
import { Redis } from 'ioredis';
import { createClient, type Client } from 'graphql-ws';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import WebSocket from 'ws';
import { createHitCounter } from '../../gateway/src/rate-limits.js';
import { startSubscriptionServer } from '../../gateway/src/subscriptions/server.js';
import { InProcessBus, RedisBus, type BusEvent } from '../../platform/messaging/event-bus.js';
import { createLogger } from '../../platform/runtime/logger.js';
import type { Principal } from '../../platform/contracts/principal.js';

// The gateway's subscription server over a real WebSocket, with the gateway's execution replaced
// by a counter: what is under test is how many resolutions an event costs and who receives it.
const SCHEMA = buildSchema(`
  type Card { SvcCardId: ID! status: String }
  type Query { card(SvcCardId: ID!): Card }
  type Subscription { cardStatusChanged: Card }
`);
const QUERY = 'subscription { cardStatusChanged { SvcCardId status } }';
/** The status resolved for cards whose id starts with `big`: 64 KiB per event. */
const BIG_STATUS = 'x'.repeat(64 * 1024);

describe('subscribers that are alike share one resolution of each event', () => {
  let server: Server;
  let url: string;
  const bus = new InProcessBus();
  const executed: Array<{ userId: string; key: unknown }> = [];
  /** Resolutions of cards whose id starts with `held` wait for this. */
  let release!: () => void;
  const held = new Promise<void>((resolve) => (release = resolve));
  const clients: Client[] = [];
  let subscriptions: ReturnType<typeof startSubscriptionServer>;
  const counter = createHitCounter(undefined, '', createLogger('silent'));

  beforeAll(async () => {
    server = createServer();
    await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
    url = `ws://127.0.0.1:${(server.address() as AddressInfo).port}/graphql`;
    subscriptions = startSubscriptionServer({
      server,
      path: '/graphql',
      schema: () => SCHEMA,
      bus,
      // The token names the user; every connection of a user gets the same principal (one login's token).
      authenticate: async (headers) =>
        ({ kind: 'user', userId: headers.token!.split(':')[0]!, sessionId: 'session', channel: 'internet' }) satisfies Principal,
      execute: async (_document, variables, principal): Promise<FormattedExecutionResult> => {
        executed.push({ userId: (principal as { userId: string }).userId, key: variables.__eventKey });
        if (String(variables.__eventKey).startsWith('held')) await held;
        return {
          data: {
            cardStatusChanged: {
              SvcCardId: variables.__eventKey,
              status: String(variables.__eventKey).startsWith('big') ? BIG_STATUS : 'off',
            },
          },
        };
      },
      logger: createLogger('silent'),
      maxPayloadBytes: 1024 * 1024,
      bodyLimitBytes: 1024 * 1024,
      documentLimits: { maxBytes: 64 * 1024, maxTokens: 5000 },
      // Every connection of a user is the same principal here: the caps are checked in subscription-limits.e2e.ts.
      limits: {
        connectionsPerPrincipal: 1000,
        connectionsPerAddress: 1000,
        subscriptionsPerPrincipal: 1000,
        subscribesPerConnection: 1000,
        subscribesPerPrincipal: 1000,
        windowSeconds: 60,
      },
      counter,
      clientAddress: (request) => request.socket.remoteAddress ?? null,
    });
  });
  afterAll(async () => {
    for (const client of clients) await client.dispose();
    await subscriptions.close();
    await counter.close();
    await new Promise<void>((resolve) => server.close(() => resolve()));
  });

  const subscribe = (token: string) => {
    const client = createClient({ url, webSocketImpl: WebSocket, connectionParams: { token }, retryAttempts: 0 });
    clients.push(client);
    const received: unknown[] = [];
    client.subscribe({ query: QUERY }, { next: (value) => void received.push(value.data), error: () => {}, complete: () => {} });
    return received;
  };
  const publish = (id: string, SvcUserId: string, SvcCardId: string): Promise<void> =>
    bus.publish({
      id,
      type: 'card.status',
      audience: { SvcUserId },
      payload: { SvcCardId },
      dtsCreated: new Date().toISOString(),
    } satisfies BusEvent);
  const until = async (check: () => boolean) => {
    const deadline = Date.now() + 5000;
    while (!check()) {
      if (Date.now() > deadline) throw new Error('timed out');
      await new Promise((resolve) => setTimeout(resolve, 20));
    }
  };

  it('resolves an event once for three alike subscribers, delivers it to each, and to nobody it does not concern', async () => {
    const alike = [subscribe('ann:1'), subscribe('ann:2'), subscribe('ann:3')];
    const stranger = subscribe('bob:1');
    await until(() => subscriptions.subscribers() === 4);

    await publish('evt_1', 'ann', 'card_1');
    await until(() => alike.every((received) => received.length === 1));
    await publish('evt_2', 'ann', 'card_2');
    await until(() => alike.every((received) => received.length === 2));

    expect(executed).toEqual([
      { userId: 'ann', key: 'card_1' },
      { userId: 'ann', key: 'card_2' },
    ]);
    for (const received of alike)
      expect(received).toEqual([
        { cardStatusChanged: { SvcCardId: 'card_1', status: 'off' } },
        { cardStatusChanged: { SvcCardId: 'card_2', status: 'off' } },
      ]);
    expect(stranger).toEqual([]);

    // A subscriber that leaves stops counting; the others still share.
    await clients[0]!.dispose();
    await until(() => subscriptions.subscribers() === 3);
    await publish('evt_3', 'ann', 'card_3');
    await until(() => alike[1]!.length === 3 && alike[2]!.length === 3);
    expect(executed).toHaveLength(3);
  });

  it('closes a subscriber that stops reading (1013), which resumes from its last position with no event missing, while an alike one that reads gets every event', async () => {
    const before = subscriptions.subscribers();
    const reader = subscribe('carl:1');
    // A raw graphql-ws client whose socket stops being read once subscribed.
    const stalled = new WebSocket(url, 'graphql-transport-ws');
    const stalledCards: string[] = [];
    let lastPosition = '';
    let acknowledged = false;
    let closedWith = 0;
    stalled.on('message', (data: Buffer) => {
      const message = JSON.parse(data.toString()) as {
        type: string;
        payload?: { data?: { cardStatusChanged?: { SvcCardId: string } }; extensions?: { position?: string } };
      };
      if (message.type === 'connection_ack') acknowledged = true;
      if (message.type === 'next') {
        stalledCards.push(message.payload?.data?.cardStatusChanged?.SvcCardId ?? '');
        lastPosition = message.payload?.extensions?.position ?? '';
      }
    });
    stalled.on('close', (code) => (closedWith = code));
    await new Promise((resolve) => stalled.once('open', resolve));
    stalled.send(JSON.stringify({ type: 'connection_init', payload: { token: 'carl:2' } }));
    await until(() => acknowledged);
    stalled.send(JSON.stringify({ id: 'stalled', type: 'subscribe', payload: { query: QUERY } }));
    await until(() => subscriptions.subscribers() === before + 2);
    stalled.pause();

    // 400 events of 64 KiB (25 MiB), a few milliseconds apart: the reader keeps up; the stalled
    // socket fills the kernel's buffers, then the gateway's 1 MiB, and is closed.
    const cards = Array.from({ length: 400 }, (_, i) => `big_${i}`);
    for (const [i, card] of cards.entries()) {
      await publish(`evt_big_${i}`, 'carl', card);
      await new Promise((resolve) => setTimeout(resolve, 2));
    }
    await until(() => reader.length === 400);
    stalled.resume();
    await until(() => closedWith !== 0);
    expect(closedWith).toBe(1013);
    expect(stalledCards.length).toBeLessThan(400);
    expect(stalledCards).toEqual(cards.slice(0, stalledCards.length));

    // It comes back with the last position it read: the rest arrives, in order, then the caught-up result.
    const resumed: Array<{ data?: unknown; extensions?: Record<string, unknown> }> = [];
    const client = createClient({ url, webSocketImpl: WebSocket, connectionParams: { token: 'carl:2' }, retryAttempts: 0 });
    clients.push(client);
    client.subscribe(
      { query: QUERY, extensions: { after: lastPosition } },
      {
        next: (value) => void resumed.push(value as { data?: unknown; extensions?: Record<string, unknown> }),
        error: () => {},
        complete: () => {},
      },
    );
    await until(() => resumed.some((result) => result.extensions?.caughtUp !== undefined));
    const replayed = resumed.filter((result) => result.data !== undefined);
    expect([
      ...stalledCards,
      ...replayed.map((result) => (result.data as { cardStatusChanged: { SvcCardId: string } }).cardStatusChanged.SvcCardId),
    ]).toEqual(cards);
    expect(replayed.every((result) => result.extensions?.replayed === true)).toBe(true);
    expect(resumed.at(-1)?.extensions?.caughtUp).toEqual({ replayed: 400 - stalledCards.length });
    // Then it is live.
    await publish('evt_after_resume', 'carl', 'small_after');
    await until(() => resumed.length === replayed.length + 2);
    expect(resumed.at(-1)?.data).toEqual({ cardStatusChanged: { SvcCardId: 'small_after', status: 'off' } });
    await client.dispose();
    await until(() => subscriptions.subscribers() === before + 1);
  });

  it('does not give a subscriber an event that arrived before it subscribed, even when it is delivered after', async () => {
    const before = subscriptions.subscribers();
    const early = subscribe('dora:1');
    await until(() => subscriptions.subscribers() === before + 1);
    // Its resolution is held until a second, alike subscriber has joined the group.
    await publish('evt_held', 'dora', 'held_1');
    await until(() => executed.some((e) => e.key === 'held_1'));
    const late = subscribe('dora:2');
    await until(() => subscriptions.subscribers() === before + 2);
    release();
    await until(() => early.length === 1);
    await publish('evt_after_join', 'dora', 'card_after');
    await until(() => early.length === 2 && late.length === 1);
    expect(late).toEqual([{ cardStatusChanged: { SvcCardId: 'card_after', status: 'off' } }]);
  });
});

describe('a resumption over the Redis log', () => {
  it('replays every readable event after the position, past an unreadable entry in the log', async () => {
    const server = createServer();
    await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
    const url = `ws://127.0.0.1:${(server.address() as AddressInfo).port}/graphql`;
    const stream = `test-resume-${process.pid}-${Date.now()}`;
    const bus = new RedisBus('redis://127.0.0.1:6379', createLogger('silent'), stream);
    const admin = new Redis('redis://127.0.0.1:6379');
    const counter = createHitCounter(undefined, '', createLogger('silent'));
    const subscriptions = startSubscriptionServer({
      server,
      path: '/graphql',
      schema: () => SCHEMA,
      bus,
      authenticate: async () => ({ kind: 'user', userId: 'erin', sessionId: 'session', channel: 'internet' }) satisfies Principal,
      execute: async (_document, variables): Promise<FormattedExecutionResult> => ({
        data: { cardStatusChanged: { SvcCardId: variables.__eventKey, status: 'off' } },
      }),
      logger: createLogger('silent'),
      maxPayloadBytes: 1024 * 1024,
      bodyLimitBytes: 1024 * 1024,
      documentLimits: { maxBytes: 64 * 1024, maxTokens: 5000 },
      limits: {
        connectionsPerPrincipal: 10,
        connectionsPerAddress: 10,
        subscriptionsPerPrincipal: 10,
        subscribesPerConnection: 10,
        subscribesPerPrincipal: 10,
        windowSeconds: 60,
      },
      counter,
      clientAddress: (request) => request.socket.remoteAddress ?? null,
    });
    const client = createClient({ url, webSocketImpl: WebSocket, connectionParams: { token: 'erin' }, retryAttempts: 0 });
    try {
      const publish = (i: number) =>
        bus.publish({
          id: `evt_resume_${i}`,
          type: 'card.status',
          audience: { SvcUserId: 'erin' },
          payload: { SvcCardId: `card_${i}` },
          dtsCreated: new Date().toISOString(),
        } satisfies BusEvent);
      const positions: string[] = [];
      bus.subscribe((event) => void positions.push(event.position));
      await bus.ready();
      await publish(0);
      // An entry no reader can parse, early in what the resumption will read, then more than a page of events.
      await admin.xadd(stream, '*', 'n', '0', 'event', 'not json');
      for (let i = 1; i <= 300; i += 1) await publish(i);
      const deadline = Date.now() + 10_000;
      while (positions.length < 301 && Date.now() < deadline) await new Promise((resolve) => setTimeout(resolve, 20));
      const received: Array<{ data?: { cardStatusChanged: { SvcCardId: string } }; extensions?: { caughtUp?: { replayed: number } } }> = [];
      client.subscribe(
        { query: QUERY, extensions: { after: positions[0]! } },
        { next: (value) => void received.push(value as (typeof received)[number]), error: () => {}, complete: () => {} },
      );
      while (!received.some((result) => result.extensions?.caughtUp) && Date.now() < deadline + 10_000)
        await new Promise((resolve) => setTimeout(resolve, 20));
      expect(received.filter((result) => result.data).map((result) => result.data!.cardStatusChanged.SvcCardId)).toEqual(
        Array.from({ length: 300 }, (_, i) => `card_${i + 1}`),
      );
      expect(received.at(-1)?.extensions?.caughtUp).toEqual({ replayed: 300 });
    } finally {
      await client.dispose();
      await subscriptions.close();
      await bus.close();
      await counter.close();
      await admin.del(stream, `${stream}:ordinal`);
      admin.disconnect();
      await new Promise<void>((resolve) => server.close(() => resolve()));
    }
  });
});
