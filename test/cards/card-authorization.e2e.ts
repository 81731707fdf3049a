import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { DEMO } from '../../platform/domain/demo.js';
import { createGraphClient } from '../../platform/graphql/graph-client.js';
import type { HttpService } from '../../platform/http/server.js';
import { Outbox } from '../../platform/messaging/outbox.js';
import { connectMongo } from '../../platform/mongo/mongo.js';
import { createLogger } from '../../platform/runtime/logger.js';
import { configFor } from '../../platform/runtime/config-slices.js';
import { startWebhookReceiver } from '../../scripts/lib/webhook-receiver.js';
import { CardAuthorizer } from '../../subgraphs/cards/src/authorization/card-authorizer.js';
import { cardMessagesCollection } from '../../subgraphs/cards/src/authorization/datasource.js';
import { RestrictionReadModel } from '../../subgraphs/cards/src/authorization/restriction-model.js';
import { AccountFunds } from '../../subgraphs/cards/src/authorization/funds.js';
import { start as startCards } from '../../subgraphs/cards/src/index.js';
import { start as startPayments } from '../../subgraphs/payments/src/index.js';
import { startTestStack, until, type TestStack } from '../support/harness.js';
import { authorizeAt, authorizeThrough, cardMessages, PROCESSOR_KEY, type CardDecision } from '../support/card-messages.js';

interface StoredTransaction {
  _id: string;
  amount: number;
  posted?: boolean;
}

const OPERATOR_KEY = 'operator-key-0123456789abcdefghijklmn';
const { message, nextStan } = cardMessages(300000, 'CAE');

describe('card authorization on local state: the restriction read model, one write, payments after', () => {
  let stack: TestStack;
  let receiver: Awaited<ReturnType<typeof startWebhookReceiver>>;
  const started: HttpService[] = [];

  const authorize = (input: Record<string, unknown>) => authorizeThrough(stack)(input);
  const operate = async <T>(query: string, variables: Record<string, unknown>) => {
    const response = await stack.graphql<T>(query, variables, { 'x-service-key': OPERATOR_KEY });
    if (response.body.errors) throw new Error(JSON.stringify(response.body.errors));
    return response.body.data!;
  };
  const payments = () => stack.mongo.db('payments');
  const balance = async () =>
    (await payments().collection<{ _id: string; balance: number }>('accounts').findOne({ _id: DEMO.accountId }))!.balance;
  /** The recorded transactions among `ids`, once each has moved its balance. */
  const posted = (ids: string[]) =>
    payments()
      .collection<StoredTransaction>('transactions')
      .find({ _id: { $in: ids }, posted: { $ne: false } })
      .toArray();

  beforeAll(async () => {
    receiver = await startWebhookReceiver(DEMO.webhook.secret);
    stack = await startTestStack({ SERVICE_KEYS: `card-processor=${PROCESSOR_KEY},operator=${OPERATOR_KEY}` });
    await stack.mongo
      .db('cards')
      .collection('webhookConfigs')
      .updateOne({ _id: DEMO.aggregatorId as never }, { $set: { url: receiver.url, timeoutMs: 500 } });
    receiver.setMode({ reply: '00' });
  });
  afterAll(async () => {
    for (const service of started) await service.close();
    await stack.stop();
    await receiver.close();
  });

  it("declines the user's next message once compliance places a procedural restriction, and approves again once it is lifted", async () => {
    // The first message loads the read model; the ones after decide from it.
    expect(await authorize(message({ messageType: '0100' }))).toMatchObject({ responseCode: '00' });
    const placed = await operate<{ placeProceduralRestriction: { id: string } }>(
      'mutation ($input: ProceduralRestrictionInput!) { placeProceduralRestriction(input: $input) { id } }',
      { input: { SvcUserId: DEMO.userId, name: 'AML review', reason: 'Unusual activity under review.' } },
    );
    const asked = receiver.received.length;
    const refused = await authorize(message({ messageType: '0100' }));
    expect(refused).toMatchObject({ responseCode: '57', approved: false, decidedBy: 'restriction' });
    expect(refused.reason).toContain('AML review');
    // Refused before the aggregator was asked.
    expect(receiver.received.length).toBe(asked);
    await operate('mutation ($id: ID!) { liftProceduralRestriction(id: $id) }', { id: placed.placeProceduralRestriction.id });
    expect(await authorize(message({ messageType: '0100' }))).toMatchObject({ responseCode: '00', decidedBy: 'aggregator' });
  });

  it('takes a card that names no currency to be in USD: a message in another currency declines 57, one in USD is recorded', async () => {
    const cards = stack.mongo.db('cards').collection<{ _id: string; currency?: string | null }>('cards');
    const card = await cards.findOne({ _id: DEMO.cardIds[0] });
    await cards.updateOne({ _id: DEMO.cardIds[0] }, { $set: { currency: null } });
    try {
      expect(await authorize(message({ currency: 'EUR' }))).toMatchObject({ responseCode: '57', decidedBy: 'card', transactionId: null });
      const inUsd = await authorize(message({ amount: 1 }));
      expect(inUsd).toMatchObject({ responseCode: '00' });
      expect(
        await until(
          () => posted([inUsd.transactionId!]),
          (found) => found.length === 1,
          5000,
        ),
      ).toHaveLength(1);
    } finally {
      await cards.updateOne({ _id: DEMO.cardIds[0] }, { $set: { currency: card?.currency ?? 'USD' } });
    }
  });

  it('stores a decided message once, as its own event, and answers a copy with the stored answer', async () => {
    const input = message();
    const decision = await authorize(input);
    const stored = await stack.mongo.db('cards').collection('cardMessages').find({ rrn: input.rrn }).toArray();
    expect(stored).toHaveLength(1);
    expect(stored[0]).toMatchObject({
      _id: decision.messageId,
      state: 'decided',
      bindingKey: decision.messageId,
      type: 'card.authorization',
      audience: { SvcUserId: DEMO.userId, svcAggregatorId: DEMO.aggregatorId },
      payload: {
        messageId: decision.messageId,
        responseCode: '00',
        transactionId: decision.transactionId,
        transaction: { SvcAccountId: DEMO.accountId, direction: 'debit', amount: '10.00', currency: 'USD' },
      },
    });
    // Carried to the bus and to payments from that one document; the outbox holds no copy of it.
    await until(
      () =>
        stack.mongo
          .db('cards')
          .collection('cardMessages')
          .findOne({ _id: decision.messageId as never }),
      (doc) => doc?.dtsPublished instanceof Date,
      5000,
    );
    expect(
      await stack.mongo
        .db('cards')
        .collection('outbox')
        .countDocuments({ type: 'card.authorization', 'payload.messageId': decision.messageId }),
    ).toBe(0);
    expect(await authorize(input)).toEqual(decision);
  });

  it('decides each kind of message with at most four database commands, and one graph call only to hold an approved debit once the read model holds', async () => {
    // An authorizer on a client of its own, so that only its commands are counted; its outbox is not started.
    const mongo = await connectMongo(stack.config.mongodbUri!, stack.config.dbPrefix, 'decision-path-test');
    const db = mongo.db('cards');
    let graphCalls = 0;
    const graph = createGraphClient(stack.config, 'cards');
    const counted = {
      request: <T>(query: string, variables?: Record<string, unknown>) => ((graphCalls += 1), graph.request<T>(query, variables)),
    };
    const rules = new RestrictionReadModel(stack.bus, counted, createLogger('silent')).start();
    const authorizer = new CardAuthorizer({
      db,
      graph: counted,
      rules,
      funds: new AccountFunds(counted, createLogger('silent')),
      messageOutbox: new Outbox(db, [], createLogger('silent'), { collection: cardMessagesCollection(db).collectionName, prune: false }),
      allowInternalWebhooks: true,
    });
    try {
      const direct = (overrides: Record<string, unknown>) => {
        const input = message(overrides);
        return { ...input, amount: String(input.amount) };
      };
      await authorizer.decide(direct({ messageType: '0100' }), createLogger('silent'));
      await rules.settled();
      const commandsOf = async (overrides: Record<string, unknown>) => {
        const [before, calls] = [mongo.commands.snapshot(mongo.databaseName('cards')), graphCalls];
        const decision = await authorizer.decide(direct(overrides), createLogger('silent'));
        const after = mongo.commands.snapshot(mongo.databaseName('cards'));
        const commands = Object.entries(after).reduce((n, [name, count]) => n + count - (before[name] ?? 0), 0);
        return { decision, commands, graphCalls: graphCalls - calls };
      };
      const stan = nextStan();
      const purchase = await commandsOf({ messageType: '0200', amount: 5, stan });
      expect(purchase).toMatchObject({ decision: { responseCode: '00', decidedBy: 'aggregator' }, commands: 4, graphCalls: 1 });
      const request = await commandsOf({ messageType: '0100' });
      expect(request).toMatchObject({ decision: { responseCode: '00' }, commands: 4, graphCalls: 1 });
      expect(await commandsOf({ messageType: '0220', amount: 2 })).toMatchObject({
        decision: { responseCode: '00', decidedBy: 'card' },
        commands: 3,
        graphCalls: 1,
      });
      expect(await commandsOf({ messageType: '0420', amount: 5, originalStan: stan })).toMatchObject({
        decision: { responseCode: '00' },
        commands: 4,
        graphCalls: 0,
      });
      expect(await commandsOf({ messageType: '0200', amount: 7500 })).toMatchObject({
        decision: { responseCode: '57', decidedBy: 'restriction' },
        commands: 3,
        graphCalls: 0,
      });
      // This authorizer's outbox never ran: the service's sweep carries what it stored to payments.
      await until(
        () => cardMessagesCollection(stack.mongo.db('cards')).countDocuments({ dtsPublished: null }),
        (n) => n === 0,
        15_000,
      );
    } finally {
      await rules.stop();
      await mongo.close();
    }
  });

  it('decides once when copies reach two replicas at once, and credits an original once when two reversals race', async () => {
    // A second cards replica on the same database, called as the gateway calls it.
    const replica = await startCards({
      config: configFor('cards', { ...stack.config, ports: { ...stack.config.ports, cards: 0 } }),
      logger: createLogger('error'),
      mongo: stack.mongo,
      bus: stack.bus,
    });
    started.push(replica);
    const atReplica = authorizeAt(replica, stack.config.internalSecret);
    const before = await balance();
    const purchase = message({ amount: 30 });
    // The aggregator holds its answer, so both copies are being decided at once.
    receiver.setMode({ reply: '00', delayMs: 300 });
    const [first, second] = await Promise.all([authorize(purchase), atReplica(purchase)]);
    receiver.setMode({ reply: '00' });
    expect(second).toEqual(first);
    expect(first).toMatchObject({ approved: true });
    expect(await stack.mongo.db('cards').collection('cardMessages').countDocuments({ rrn: purchase.rrn })).toBe(1);
    // Each replica asked the aggregator, under the one webhook-id it can drop the repeat by.
    const asked = receiver.received.filter((w) => w.payload.rrn === purchase.rrn);
    expect(asked).toHaveLength(2);
    expect(new Set(asked.map((w) => w.id))).toEqual(new Set([first.messageId]));

    const reversals = [
      message({ messageType: '0420', amount: 30, originalStan: purchase.stan }),
      message({ messageType: '0420', amount: 30, originalStan: purchase.stan }),
    ];
    const [one, other] = await Promise.all([authorize(reversals[0]!), atReplica(reversals[1]!)]);
    const crediting = [one, other].filter((d) => d.transactionId !== null);
    expect(crediting).toHaveLength(1);
    expect([one, other].find((d) => d.transactionId === null)?.reason).toMatch(/already reversed/);
    const ids = [first.transactionId!, crediting[0]!.transactionId!];
    const recorded = await until(
      () => posted(ids),
      (found) => found.length === 2,
      5000,
    );
    expect(recorded.map((t) => t.amount).sort((a, b) => a - b)).toEqual([-3000, 3000]);
    expect(await balance()).toBe(before);
  });

  it('declines requests that spend 91 while payments is down, takes advices and reversals, and payments records each approved message exactly once when it is back', async () => {
    const paymentsService = stack.subgraphs.payments;
    const before = await balance();
    const available = async () =>
      (await payments()
        .collection<{ _id: string; availableBalance: number; purchaseHolds?: string[] }>('accounts')
        .findOne({ _id: DEMO.accountId }))!;
    const availableBefore = (await available()).availableBalance;
    // Approved while payments answers: held, then posted.
    const purchase = message({ amount: 12.5 });
    const approved = await authorize(purchase);
    expect(approved).toMatchObject({ responseCode: '00' });
    await until(
      () => posted([approved.transactionId!]),
      (found) => found.length === 1,
      15_000,
    );
    paymentsService.server.closeAllConnections();
    await paymentsService.close();
    // Without the ledger nothing can be held, so no request that spends is approved.
    const debits: CardDecision[] = [];
    for (const input of [message({ amount: 7.25 }), message({ messageType: '0100', amount: 1 })]) debits.push(await authorize(input));
    expect(debits.map((d) => [d.responseCode, d.decidedBy, d.transactionId])).toEqual(Array(2).fill(['91', 'funds', null]));
    // An advice reports a sale made, and a reversal gives money back: both are decided from local state and carried when payments is back.
    const advice = await authorize(message({ messageType: '0220', amount: 3 }));
    expect(advice).toMatchObject({ approved: true });
    const reversal = await authorize(message({ messageType: '0420', amount: 2, originalStan: purchase.stan }));
    expect(reversal).toMatchObject({ approved: true });
    const ids = [approved.transactionId!, advice.transactionId!, reversal.transactionId!];
    expect(ids.every((id) => id.startsWith('txn_msg_'))).toBe(true);
    expect(
      await payments()
        .collection('transactions')
        .countDocuments({ _id: { $in: ids.slice(1) } as never }),
    ).toBe(0);

    const restarted = await startPayments({
      config: configFor('payments', { ...stack.config, ports: { ...stack.config.ports, payments: paymentsService.port } }),
      logger: createLogger('error'),
      mongo: stack.mongo,
      bus: stack.bus,
    });
    started.push(restarted);
    // The cards outbox's sweep carries the backlog once payments answers again.
    const recorded = await until(
      () => posted(ids),
      (found) => found.length === ids.length,
      15_000,
    );
    expect(new Map(recorded.map((t) => [t._id, t.amount]))).toEqual(
      new Map([
        [ids[0], -1250],
        [ids[1], -300],
        [ids[2], 200],
      ]),
    );
    expect(await balance()).toBe(before - 1250 - 300 + 200);

    // Carried again (as after a crash between carrying and marking): nothing is recorded or moved twice.
    await stack.mongo
      .db('cards')
      .collection('cardMessages')
      .updateMany({ transactionId: { $in: ids } }, { $set: { dtsPublished: null } });
    await until(
      () =>
        stack.mongo
          .db('cards')
          .collection('cardMessages')
          .countDocuments({ transactionId: { $in: ids }, dtsPublished: null }),
      (n) => n === 0,
      15_000,
    );
    expect(
      await payments()
        .collection('transactions')
        .countDocuments({ _id: { $in: ids } as never }),
    ).toBe(ids.length);
    expect(await balance()).toBe(before - 1250 - 300 + 200);
    expect(await available()).toMatchObject({ availableBalance: availableBefore - 1250 - 300 + 200, purchaseHolds: [] });

    // And the user sees them through the graph.
    const token = await stack.loginDemo();
    const seen = await stack.graphql<{
      me: {
        accounts: Array<{ SvcAccountId: string; transactions: { edges: Array<{ node: { transactionId: string; amount: string } }> } }>;
      };
    }>('{ me { accounts { SvcAccountId transactions(first: 20) { edges { node { transactionId amount } } } } } }', {}, { token });
    const seenAccount = seen.body.data?.me.accounts.find((a) => a.SvcAccountId === DEMO.accountId);
    expect(
      seenAccount?.transactions.edges
        .filter((e) => ids.includes(e.node.transactionId))
        .map((e) => e.node.amount)
        .sort(),
    ).toEqual(['-12.50', '-3.00', '2.00']);
  });
});
