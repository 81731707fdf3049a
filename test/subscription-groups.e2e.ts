import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { buildSchema, type FormattedExecutionResult } from 'graphql';
import { createClient, type Client } from 'graphql-ws';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import WebSocket from 'ws';
import { startSubscriptionServer } from '../gateway/src/subscriptions.js';
import { InProcessBus, type BusEvent } from '../platform/event-bus.js';
import { createLogger } from '../platform/logger.js';
import type { Principal } from '../platform/principal.js';

// The gateway's subscription server over a real WebSocket, with the gateway's execution replaced
// by a counter: what is under test is how many resolutions an event costs and who receives it.
const SCHEMA = buildSchema(`
  type Card { SvcCardId: ID! status: String }
  type Query { card(SvcCardId: ID!): Card }
  type Subscription { cardStatusChanged: Card }
`);
const QUERY = 'subscription { cardStatusChanged { SvcCardId status } }';

describe('subscribers that are alike share one resolution of each event', () => {
  let server: Server;
  let url: string;
  const bus = new InProcessBus();
  const executed: Array<{ userId: string; key: unknown }> = [];
  const clients: Client[] = [];
  let subscriptions: ReturnType<typeof startSubscriptionServer>;

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
      authenticate: async (headers) => ({ kind: 'user', userId: headers.token!.split(':')[0]!, sessionId: 'session', channel: 'internet' }) satisfies Principal,
      execute: async (_document, variables, principal): Promise<FormattedExecutionResult> => {
        executed.push({ userId: (principal as { userId: string }).userId, key: variables.__eventKey });
        return { data: { cardStatusChanged: { SvcCardId: variables.__eventKey, status: 'off' } } };
      },
      logger: createLogger('silent'),
      maxPayloadBytes: 1024 * 1024,
    });
  });
  afterAll(async () => {
    for (const client of clients) await client.dispose();
    await subscriptions.close();
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
    bus.publish({ id, type: 'card.status', audience: { SvcUserId }, payload: { SvcCardId }, dtsCreated: new Date().toISOString() } satisfies BusEvent);
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

    expect(executed).toEqual([{ userId: 'ann', key: 'card_1' }, { userId: 'ann', key: 'card_2' }]);
    for (const received of alike) expect(received).toEqual([{ cardStatusChanged: { SvcCardId: 'card_1', status: 'off' } }, { cardStatusChanged: { SvcCardId: 'card_2', status: 'off' } }]);
    expect(stranger).toEqual([]);

    // A subscriber that leaves stops counting; the others still share.
    await clients[0]!.dispose();
    await until(() => subscriptions.subscribers() === 3);
    await publish('evt_3', 'ann', 'card_3');
    await until(() => alike[1]!.length === 3 && alike[2]!.length === 3);
    expect(executed).toHaveLength(3);
  });
});
