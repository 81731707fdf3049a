import { spawn } from 'node:child_process';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { createClient, type Client } from 'graphql-ws';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import WebSocket from 'ws';
import { start as startGateway } from '../../gateway/src/index.js';
import { SUBSCRIPTION_ROUTES } from '../../gateway/src/subscriptions/routes.js';
import { DEMO } from '../../platform/domain/demo.js';
import { createEventBus, InProcessBus, type EventBus } from '../../platform/messaging/event-bus.js';
import type { EventType } from '../../platform/contracts/events.js';
import { busDispatcher, Outbox, type OutboxEvent } from '../../platform/messaging/outbox.js';
import { createLogger } from '../../platform/runtime/logger.js';
import { configFor } from '../../platform/runtime/config-slices.js';
import { usersCollection } from '../../subgraphs/user/src/profile/datasource.js';
import { accepted, openConnection } from '../support/graphql-ws.js';
import { startTestStack, toggleCardUntil, until, type TestStack } from '../support/harness.js';

interface Next<T> {
  data?: T | null;
  errors?: Array<{ message: string }>;
}
const HERE = path.dirname(fileURLToPath(import.meta.url));
const PROCESSOR_KEY = 'card-processor-key-for-subscriptions-0123';
const ACH_KEY = 'ach-processor-key-for-subscriptions-012345';
const OPERATOR_KEY = 'operator-key-for-subscriptions-0123456789';

/** A graphql-ws subscriber that collects what arrives. */
function subscriber(url: string, connectionParams: Record<string, string>) {
  const client: Client = createClient({ url, webSocketImpl: WebSocket, connectionParams, retryAttempts: 0, lazy: true });
  const clients: Client[] = [client];
  return {
    client,
    /** Subscribes and returns the received results and a way to wait for the next one. */
    subscribe<T>(query: string) {
      const received: Array<Next<T>> = [];
      const errors: unknown[] = [];
      let started!: () => void;
      const acknowledged = new Promise<void>((resolve) => (started = resolve));
      client.on('connected', () => started());
      const dispose = client.subscribe<T>(
        { query },
        { next: (value) => void received.push(value as Next<T>), error: (error) => void errors.push(error), complete: () => {} },
      );
      /** How many received results `next` has handed out. */
      let taken = 0;
      return {
        received,
        errors,
        acknowledged,
        dispose,
        /** The next result not handed out yet, in order: one that arrived before the call (an event may beat the answer of the request that caused it) counts. */
        async next(timeoutMs = 10_000): Promise<Next<T>> {
          const deadline = Date.now() + timeoutMs;
          while (received.length === taken) {
            if (errors.length) throw new Error(`subscription failed: ${JSON.stringify(errors[0])}`);
            if (Date.now() > deadline) throw new Error('no event arrived in time');
            await new Promise((resolve) => setTimeout(resolve, 25));
          }
          return received[taken++]!;
        },
      };
    },
    close: () =>
      Promise.all(
        clients.map(async (c) => {
          await c.dispose();
        }),
      ),
  };
}

describe('subscriptions over graphql-ws', () => {
  let stack: TestStack;
  let token: string;
  let wsUrl: string;
  const closers: Array<() => unknown> = [];

  beforeAll(async () => {
    stack = await startTestStack({
      REDIS_URL: 'redis://127.0.0.1:6379',
      SERVICE_KEYS: `card-processor=${PROCESSOR_KEY},ach-processor=${ACH_KEY},operator=${OPERATOR_KEY}`,
    });
    token = await stack.loginDemo();
    wsUrl = `${stack.gateway.url.replace('http', 'ws')}/graphql`;
  });
  afterAll(async () => {
    for (const close of closers) await close();
    await stack.stop();
  });
  /** An event that does not arrive fails with the stack's last warnings and errors, to say why. */
  const withLogs = <T>(waiting: Promise<T>): Promise<T> =>
    waiting.catch((error: unknown) => {
      throw new Error(
        `${(error as Error).message}; last warnings: ${JSON.stringify(stack.logs.filter((line) => line.level === 'warn' || line.level === 'error').slice(-5))}`,
      );
    });
  /**
   * Turns the demo card off and waits for `delivered` to receive it, then gives `undelivered` half
   * a second more to receive anything (it must not), and turns the card back on.
   */
  const deliveredToOneOnly = async (delivered: { next(): Promise<unknown> }, undelivered: { received: unknown[] }) => {
    expect((await stack.rest('POST', `/cards/${DEMO.cardIds[0]}/off`, { headers: { token } })).status).toBe(200);
    await withLogs(delivered.next());
    await new Promise((resolve) => setTimeout(resolve, 500));
    expect(undelivered.received).toEqual([]);
    await stack.rest('POST', `/cards/${DEMO.cardIds[0]}/on`, { headers: { token } });
  };
  /** Waits until the gateway holds `count` more subscriptions than `before`: registered, so an event now reaches them. */
  const registered = (before: number, count = 1) =>
    until(
      async () => stack.gateway.subscribers(),
      (n) => n >= before + count,
    );

  it('shows the subscriptions the gateway serves over HTTP too (introspection), though it serves them on graphql-ws only', async () => {
    const introspected = await stack.graphql<{ __schema: { subscriptionType: { fields: Array<{ name: string }> } | null } }>(
      '{ __schema { subscriptionType { fields { name } } } }',
      undefined,
      { token },
    );
    expect(introspected.body.errors).toBeUndefined();
    expect(introspected.body.data?.__schema.subscriptionType?.fields.map((field) => field.name).sort()).toEqual(
      Object.keys(SUBSCRIPTION_ROUTES).sort(),
    );
    const overHttp = await stack.graphql('subscription { cardStatusChanged { SvcCardId } }', undefined, { token });
    expect(overHttp.status).toBe(400);
    expect(overHttp.body.errors?.[0]?.extensions?.code).toBe('BAD_REQUEST');
  });

  it('delivers a card status change triggered through the REST adapter, with fields of other subgraphs resolved', async () => {
    const user = subscriber(wsUrl, { token });
    closers.push(user.close);
    const before = stack.gateway.subscribers();
    const sub = user.subscribe<{
      cardStatusChanged: { SvcCardId: string; status: string; user: { firstName: string }; account: { SvcAccountId: string } };
    }>('subscription { cardStatusChanged { SvcCardId status user { firstName } } }');
    await registered(before);
    expect((await stack.rest('POST', `/cards/${DEMO.cardIds[0]}/off`, { headers: { token } })).status).toBe(200);
    const event = await withLogs(sub.next());
    expect(event.errors).toBeUndefined();
    expect(event.data?.cardStatusChanged).toMatchObject({ SvcCardId: DEMO.cardIds[0], status: 'blocked', user: { firstName: 'Dana' } });
    await stack.rest('POST', `/cards/${DEMO.cardIds[0]}/on`, { headers: { token } });
    expect((await withLogs(sub.next())).data?.cardStatusChanged.status).toBe('active');
  });

  it('delivers a card authorization with its card, its user and the transaction it recorded, across three subgraphs', async () => {
    // Nobody answers the demo aggregator's webhook here: its default strategy decides, approve.
    await stack.mongo
      .db('cards')
      .collection('webhookConfigs')
      .updateOne(
        { _id: DEMO.aggregatorId as never },
        { $set: { defaultStrategy: 'approve', url: 'http://127.0.0.1:9/nobody', timeoutMs: 200 } },
      );
    const user = subscriber(wsUrl, { token });
    closers.push(user.close);
    type Authorization = {
      messageType: string;
      approved: boolean;
      card: { SvcCardId: string; user: { firstName: string } };
      transaction: { amount: string; narrative: string } | null;
    };
    const before = stack.gateway.subscribers();
    const sub = user.subscribe<{ cardAuthorizations: Authorization }>(
      'subscription { cardAuthorizations { messageType approved card { SvcCardId user { firstName } } transaction { amount narrative } } }',
    );
    await registered(before);
    const decided = await stack.graphql<{ authorizeCardMessage: { approved: boolean } }>(
      'mutation ($input: CardMessageInput!) { authorizeCardMessage(input: $input) { approved } }',
      {
        input: {
          messageType: '0200',
          svcCardId: DEMO.cardIds[0],
          amount: '12.34',
          currency: 'USD',
          merchantName: 'Bike Shop',
          mcc: '5940',
          stan: '778899',
          rrn: 'RRN000778899',
        },
      },
      { 'x-service-key': PROCESSOR_KEY },
    );
    expect(decided.body.errors).toBeUndefined();
    expect(decided.body.data?.authorizeCardMessage.approved).toBe(true);
    const event = await withLogs(sub.next());
    expect(event.errors).toBeUndefined();
    expect(event.data?.cardAuthorizations).toEqual({
      messageType: '0200',
      approved: true,
      card: { SvcCardId: DEMO.cardIds[0], user: { firstName: 'Dana' } },
      transaction: { amount: '-12.34', narrative: 'Bike Shop' },
    });
  });

  it("does not deliver one user's events to another user's subscriber", async () => {
    const users = usersCollection(stack.mongo.db('user'));
    const demo = await users.findOne({ _id: DEMO.userId });
    await users.insertOne({ ...demo!, _id: 'ws_other_user', SvcUserId: 'ws_other_user' });
    const otherToken = await stack.issueUserToken('ws_other_user');
    const other = subscriber(wsUrl, { token: otherToken });
    const mine = subscriber(wsUrl, { token });
    closers.push(other.close, mine.close);
    const before = stack.gateway.subscribers();
    const theirs = other.subscribe<{ cardStatusChanged: { SvcCardId: string } }>('subscription { cardStatusChanged { SvcCardId } }');
    const own = mine.subscribe<{ cardStatusChanged: { SvcCardId: string } }>('subscription { cardStatusChanged { SvcCardId } }');
    await registered(before, 2);
    await deliveredToOneOnly(own, theirs);
  });

  it('reads the answer for its own field only: an alias named after an inherited property, skipped, receives no event', async () => {
    const mine = subscriber(wsUrl, { token });
    closers.push(mine.close);
    const before = stack.gateway.subscribers();
    const skipped = mine.subscribe<Record<string, unknown>>('subscription { toString: cardStatusChanged @skip(if: true) { SvcCardId } }');
    const own = mine.subscribe<{ cardStatusChanged: { SvcCardId: string } }>('subscription { cardStatusChanged { SvcCardId } }');
    await registered(before, 2);
    await deliveredToOneOnly(own, skipped);
  });

  it('refuses a connection without valid credentials', async () => {
    const anonymous = subscriber(wsUrl, { token: 'not-a-token' });
    closers.push(anonymous.close);
    const sub = anonymous.subscribe('subscription { cardStatusChanged { SvcCardId } }');
    await expect(sub.next(3000)).rejects.toThrow(/subscription failed/);
  });

  it("delivers a payment link's status changes to its aggregator, with the merchant resolved", async () => {
    const aggregatorToken = (
      await stack.rest<{ data: { token: string } }>('POST', '/auth/get-token', {
        body: { user: { login: DEMO.aggregatorLogin, password: DEMO.aggregatorPassword } },
      })
    ).body.data.token;
    const aggregator = subscriber(wsUrl, { 'x-svc-token': aggregatorToken });
    closers.push(aggregator.close);
    const before = stack.gateway.subscribers();
    const sub = aggregator.subscribe<{
      paymentLinkStatusChanged: { svcTransactionId: string; status: string; merchant: { name: string } };
    }>('subscription { paymentLinkStatusChanged { svcTransactionId status merchant { name } } }');
    await registered(before);
    const jwt = (
      await stack.rest<{ data: { token: string } }>('POST', '/payment-link/merchant/get-token', {
        headers: { 'x-svc-token': aggregatorToken },
        body: { svcMerchantId: DEMO.merchantId },
      })
    ).body.data.token;
    expect(
      (
        await stack.rest('POST', '/public/merchant/payment/cancel', {
          headers: { 'x-svc-jwtoken': jwt },
          body: { svcTransactionId: 'demo_link_1' },
        })
      ).status,
    ).toBe(200);
    const event = await withLogs(sub.next());
    expect(event.data?.paymentLinkStatusChanged).toEqual({
      svcTransactionId: 'demo_link_1',
      status: 'Cancelled',
      merchant: { name: 'Demo Bikes & Repairs' },
    });
  });

  it("delivers a merchant's own link changes to its merchant JWT, and refuses a service key", async () => {
    const aggregatorToken = (
      await stack.rest<{ data: { token: string } }>('POST', '/auth/get-token', {
        body: { user: { login: DEMO.aggregatorLogin, password: DEMO.aggregatorPassword } },
      })
    ).body.data.token;
    const jwt = (
      await stack.rest<{ data: { token: string } }>('POST', '/payment-link/merchant/get-token', {
        headers: { 'x-svc-token': aggregatorToken },
        body: { svcMerchantId: DEMO.merchantId },
      })
    ).body.data.token;
    const merchant = subscriber(wsUrl, { 'x-svc-jwtoken': jwt });
    closers.push(merchant.close);
    const before = stack.gateway.subscribers();
    const sub = merchant.subscribe<{ paymentLinkStatusChanged: { svcTransactionId: string; status: string } }>(
      'subscription { paymentLinkStatusChanged { svcTransactionId status } }',
    );
    await registered(before);
    const link = (
      await stack.rest<{ data: { svcTransactionId: string } }>('POST', '/public/merchant/payment/create', {
        headers: { 'x-svc-jwtoken': jwt },
        body: { amount: 5, currency: 'USD' },
      })
    ).body.data;
    expect((await withLogs(sub.next())).data?.paymentLinkStatusChanged).toEqual({
      svcTransactionId: link.svcTransactionId,
      status: 'Initiated',
    });
    const service = subscriber(wsUrl, { 'x-service-key': PROCESSOR_KEY });
    closers.push(service.close);
    await expect(service.subscribe('subscription { cardStatusChanged { SvcCardId } }').next(3000)).rejects.toThrow(/subscription failed/);
  });

  it("delivers an aggregator's ACH payment updates", async () => {
    const aggregatorToken = (
      await stack.rest<{ data: { token: string } }>('POST', '/auth/get-token', {
        body: { user: { login: DEMO.aggregatorLogin, password: DEMO.aggregatorPassword } },
      })
    ).body.data.token;
    const aggregator = subscriber(wsUrl, { 'x-svc-token': aggregatorToken });
    closers.push(aggregator.close);
    const before = stack.gateway.subscribers();
    const sub = aggregator.subscribe<{ achPaymentUpdated: { svcTransactionId: string; status: string; returnCode: string | null } }>(
      'subscription { achPaymentUpdated { svcTransactionId status returnCode } }',
    );
    await registered(before);
    const ach = (query: string) => stack.graphql(query, {}, { 'x-service-key': ACH_KEY });
    await ach(
      `mutation { recordAchDebit(input: { svcTransactionId: "ws_ach_1", svcAggregatorId: "${DEMO.aggregatorId}", amount: 12, effectiveEntryDate: "2026-11-20" }) { status } }`,
    );
    expect((await withLogs(sub.next())).data?.achPaymentUpdated).toMatchObject({ svcTransactionId: 'ws_ach_1', status: 'Processing' });
    await ach('mutation { recordAchReturn(input: { svcTransactionId: "ws_ach_1", returnCode: "R01" }) { status } }');
    // The debit's event may be seen twice (the outbox's bus sweep): wait for the return.
    let event = await sub.next();
    while (event.data?.achPaymentUpdated.returnCode === null) event = await sub.next();
    expect(event.data?.achPaymentUpdated).toMatchObject({ svcTransactionId: 'ws_ach_1', status: 'Returned', returnCode: 'R01' });
  });

  it('holds a connection to at most 25 subscriptions', async () => {
    const user = subscriber(wsUrl, { token });
    closers.push(user.close);
    const before = stack.gateway.subscribers();
    const subs = Array.from({ length: 25 }, () => user.subscribe('subscription { cardStatusChanged { SvcCardId } }'));
    await registered(before, 25);
    const extra = user.subscribe('subscription { cardStatusChanged { SvcCardId } }');
    await expect(extra.next(3000)).rejects.toThrow(/At most 25 subscriptions/);
    expect(subs.every((s) => s.errors.length === 0)).toBe(true);
  });

  it('prunes published events after a week, keeping forwarded events (ACH, audit) compliance has not received', async () => {
    const outbox = stack.mongo.db('payments').collection<OutboxEvent>('outbox');
    const old = new Date(Date.now() - 8 * 24 * 3_600_000);
    const event = (id: string, type: EventType, extra: Partial<OutboxEvent> = {}) =>
      ({ _id: id, type, audience: {}, payload: {}, dtsCreated: old, dtsPublished: old, ...extra }) as OutboxEvent;
    const ids = ['old_published', 'old_ach_unforwarded', 'old_ach_forwarded', 'old_audit_unforwarded', 'recent'];
    await outbox.insertMany([
      event('old_published', 'payment_link.status'),
      event('old_ach_unforwarded', 'ach.debit', { dtsForwarded: null }),
      event('old_ach_forwarded', 'ach.return', { dtsForwarded: old }),
      event('old_audit_unforwarded', 'audit.recorded', { dtsForwarded: null }),
      event('recent', 'payment_link.status', { dtsPublished: new Date() }),
    ]);
    // Without forwarding dispatchers here, so that the unforwarded events stay unforwarded.
    const engine = new Outbox(stack.mongo.db('payments'), [busDispatcher(new InProcessBus())], createLogger('silent')).start();
    await engine.idle();
    await engine.stop();
    const left = (await outbox.find({ _id: { $in: ids } }).toArray()).map((e) => e._id).sort();
    expect(left).toEqual(['old_ach_unforwarded', 'old_audit_unforwarded', 'recent']);
  });

  it('marks the events a sweep published before the bus failed, and publishes the rest on the next pass', async () => {
    const db = stack.mongo.client.db(`${stack.mongo.databaseName('user')}_partial`);
    const published: string[] = [];
    let away = true;
    const flaky = new InProcessBus();
    const bus: EventBus = {
      publish: async (event) => {
        if (away && published.length === 2) throw new Error('the bus is away');
        published.push(event.id);
        await flaky.publish(event);
      },
      subscribe: (listener) => flaky.subscribe(listener),
      continuity: () => flaky.continuity(),
      ready: () => flaky.ready(),
      position: () => flaky.position(),
      read: (after, through, limit) => flaky.read(after, through, limit),
      close: () => flaky.close(),
    };
    const events: OutboxEvent[] = Array.from({ length: 5 }, (_, i) => ({
      _id: `evt_partial_${i}`,
      type: 'card.status',
      audience: {},
      payload: { SvcCardId: `card_${i}`, status: 'blocked', isActive: false },
      dtsCreated: new Date(Date.now() + i),
      dtsPublished: null,
    }));
    await db.collection<OutboxEvent>('outbox').insertMany(events);
    const engine = new Outbox(db, [busDispatcher(bus)], createLogger('silent'), { everyMs: 60_000 }).start();
    await engine.idle();
    const unpublished = async () =>
      (await db.collection<OutboxEvent>('outbox').find({ dtsPublished: null }).sort({ _id: 1 }).toArray()).map((event) => event._id);
    expect(published).toEqual(['evt_partial_0', 'evt_partial_1']);
    expect(await unpublished()).toEqual(['evt_partial_2', 'evt_partial_3', 'evt_partial_4']);
    away = false;
    engine.nudge();
    await engine.idle();
    expect(published).toEqual(events.map((event) => event._id));
    expect(await unpublished()).toEqual([]);
    await engine.stop();
    await db.dropDatabase();
  });

  it('marks events published with a write per batch, and leaves none unmarked', async () => {
    const db = stack.mongo.client.db(`${stack.mongo.databaseName('user')}_marks`);
    const engine = new Outbox(db, [busDispatcher(new InProcessBus())], createLogger('silent'), { everyMs: 60_000 }).start();
    const events: OutboxEvent[] = Array.from({ length: 40 }, (_, i) => ({
      _id: `evt_mark_${i}`,
      type: 'card.status',
      audience: {},
      payload: { SvcCardId: `card_${i}`, status: 'blocked', isActive: false },
      dtsCreated: new Date(),
      dtsPublished: null,
    }));
    await db.collection<OutboxEvent>('outbox').insertMany(events);
    await engine.idle();
    // The start-up sweep published and marked them; unmark them and publish them as just stored.
    await db.collection<OutboxEvent>('outbox').updateMany({}, { $set: { dtsPublished: null } });
    const before = stack.mongo.commands.count(db.databaseName, 'outbox', 'update');
    for (const event of events) engine.stored({ ...event, dtsPublished: null });
    await new Promise((resolve) => setTimeout(resolve, 50));
    await engine.idle();
    expect(await db.collection<OutboxEvent>('outbox').countDocuments({ dtsPublished: null })).toBe(0);
    // The first mark is written at once; the 39 published while it ran, together by the next write.
    expect(stack.mongo.commands.count(db.databaseName, 'outbox', 'update') - before).toBe(2);
    await engine.stop();
    await db.dropDatabase();
  });

  it('closes a connection at once (4401) when its token is logged out, and delivers it no event caused after the logout', async () => {
    const own = await stack.loginDemo();
    const connection = accepted(await openConnection(wsUrl, { token: own }));
    closers.push(connection.close);
    // A subscriber with another session of the same user receives the change: the logged-out one must not.
    const witness = subscriber(wsUrl, { token });
    closers.push(witness.close);
    const before = stack.gateway.subscribers();
    connection.subscribe('mine', 'subscription { cardStatusChanged { SvcCardId status } }');
    const seen = witness.subscribe<{ cardStatusChanged: { SvcCardId: string; status: string } }>(
      'subscription { cardStatusChanged { SvcCardId status } }',
    );
    await registered(before, 2);
    expect((await stack.rest('DELETE', '/token', { headers: { token: own } })).status).toBe(200);
    const loggedOut = performance.now();
    // A change right after the logout: an event caused after it.
    expect((await stack.rest('POST', `/cards/${DEMO.cardIds[0]}/off`, { headers: { token } })).status).toBe(200);
    const closed = await connection.closed;
    expect(closed.code).toBe(4401);
    expect(closed.at - loggedOut).toBeLessThan(1000);
    expect((await withLogs(seen.next())).data?.cardStatusChanged).toMatchObject({ SvcCardId: DEMO.cardIds[0], status: 'blocked' });
    await stack.rest('POST', `/cards/${DEMO.cardIds[0]}/on`, { headers: { token } });
    await withLogs(seen.next());
    expect(connection.frames.filter((frame) => frame.type === 'next')).toEqual([]);
    // The closed connection's subscription is released.
    await until(
      async () => stack.gateway.subscribers(),
      (n) => n === before + 1,
    );
  });

  it('closes the connections of a user an operator blocks (4401) at once, and delivers them no event caused after the block', async () => {
    const own = await stack.loginDemo();
    const connection = accepted(await openConnection(wsUrl, { token: own }));
    closers.push(connection.close);
    // The demo aggregator sees its card program's authorizations: the blocked user must not.
    const aggregatorToken = (
      await stack.rest<{ data: { token: string } }>('POST', '/auth/get-token', {
        body: { user: { login: DEMO.aggregatorLogin, password: DEMO.aggregatorPassword } },
      })
    ).body.data.token;
    const witness = subscriber(wsUrl, { 'x-svc-token': aggregatorToken });
    closers.push(witness.close);
    const before = stack.gateway.subscribers();
    connection.subscribe('mine', 'subscription { cardAuthorizations { messageId } }');
    const seen = witness.subscribe<{ cardAuthorizations: { messageId: string } }>('subscription { cardAuthorizations { messageId } }');
    await registered(before, 2);
    const setActive = (isActive: boolean) =>
      stack.graphql<{ setUserActive: { SvcUserId: string } }>(
        'mutation ($id: ID!, $active: Boolean!) { setUserActive(SvcUserId: $id, isActive: $active) { SvcUserId } }',
        { id: DEMO.userId, active: isActive },
        { 'x-service-key': OPERATOR_KEY },
      );
    try {
      expect((await setActive(false)).body.errors).toBeUndefined();
      const blocked = performance.now();
      // An authorization on the user's card right after the block: an event caused after it.
      const decided = await stack.graphql<{ authorizeCardMessage: { messageId: string } }>(
        'mutation ($input: CardMessageInput!) { authorizeCardMessage(input: $input) { messageId } }',
        {
          input: {
            messageType: '0200',
            svcCardId: DEMO.cardIds[0],
            amount: '1.00',
            currency: 'USD',
            merchantName: 'After the block',
            mcc: '5940',
            stan: '778900',
            rrn: 'RRN000778900',
          },
        },
        { 'x-service-key': PROCESSOR_KEY },
      );
      expect(decided.body.errors).toBeUndefined();
      const closed = await connection.closed;
      expect(closed.code).toBe(4401);
      expect(closed.at - blocked).toBeLessThan(1000);
      expect((await withLogs(seen.next())).data?.cardAuthorizations.messageId).toBe(decided.body.data?.authorizeCardMessage.messageId);
      expect(connection.frames.filter((frame) => frame.type === 'next')).toEqual([]);
    } finally {
      await setActive(true);
    }
  });

  it('reaches a subscriber on a second gateway instance through Redis', async () => {
    const bus = createEventBus('redis://127.0.0.1:6379', createLogger('silent'), stack.config.dbPrefix);
    const second = await startGateway({
      config: configFor('gateway', {
        ...stack.config,
        ports: { ...stack.config.ports, gateway: 0 },
        subgraphUrls: Object.fromEntries(Object.entries(stack.subgraphs).map(([name, s]) => [name, `${s.url}/graphql`])) as never,
      }),
      logger: createLogger('silent'),
      bus,
    });
    closers.push(async () => {
      await second.close();
      await bus.close();
    });
    const remote = subscriber(`${second.url.replace('http', 'ws')}/graphql`, { token });
    closers.push(remote.close);
    const sub = remote.subscribe<{ cardStatusChanged: { SvcCardId: string; status: string } }>(
      'subscription { cardStatusChanged { SvcCardId status } }',
    );
    await sub.acknowledged;
    await toggleCardUntil(stack, token, DEMO.cardIds[0], () => sub.received.length > 0);
    const first = sub.received[0] ?? (await sub.next());
    expect(first.data?.cardStatusChanged).toMatchObject({ SvcCardId: DEMO.cardIds[0] });
    // A logout served by the first gateway closes the session's connection on the second at once, through the bus.
    const own = await stack.loginDemo();
    const connection = accepted(await openConnection(`${second.url.replace('http', 'ws')}/graphql`, { token: own }));
    closers.push(connection.close);
    expect((await stack.rest('DELETE', '/token', { headers: { token: own } })).status).toBe(200);
    const loggedOut = performance.now();
    const closed = await connection.closed;
    expect(closed.code).toBe(4401);
    expect(closed.at - loggedOut).toBeLessThan(1000);
  });

  it('publishes an event whose process died between storing and publishing it', async () => {
    const user = subscriber(wsUrl, { token });
    closers.push(user.close);
    const before = stack.gateway.subscribers();
    const sub = user.subscribe<{ cardStatusChanged: { SvcCardId: string } }>('subscription { cardStatusChanged { SvcCardId } }');
    await registered(before);
    // A separate process stores a state change's event and exits at once, before publishing it.
    const child = spawn(process.execPath, ['--import', 'tsx', path.join(HERE, '..', 'support', 'fixtures', 'store-event-and-die.ts')], {
      env: {
        ...process.env,
        MONGODB_URI: stack.config.mongodbUri,
        DB: stack.mongo.databaseName('cards'),
        SVC_CARD_ID: DEMO.cardIds[1],
        SVC_USER_ID: DEMO.userId,
      },
      stdio: 'inherit',
    });
    expect(await new Promise((resolve) => child.on('exit', resolve))).toBe(0);
    const stored = await stack.mongo
      .db('cards')
      .collection('outbox')
      .findOne({ 'payload.SvcCardId': DEMO.cardIds[1], type: 'card.status' });
    expect(stored).toBeTruthy();
    // The running outbox engine's bus sweep finds it on its timer.
    expect((await withLogs(sub.next())).data?.cardStatusChanged.SvcCardId).toBe(DEMO.cardIds[1]);
  });
});
