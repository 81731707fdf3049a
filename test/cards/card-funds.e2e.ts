import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { DEMO } from '../../platform/demo/demo.js';
import { createGraphClient } from '../../platform/graphql/graph-client.js';
import type { HttpService } from '../../platform/http/server.js';
import { minor } from '../../platform/money/money.js';
import { createLogger } from '../../platform/runtime/logger.js';
import { signPrincipal } from '../../platform/security/principal.js';
import { startWebhookReceiver } from '../../scripts/lib/webhook-receiver.js';
import { SpendingBalances } from '../../subgraphs/cards/src/authorization/spending.js';
import { start as startCards } from '../../subgraphs/cards/src/index.js';
import { startTestStack, until, type GraphQLBody, type TestStack } from '../support/harness.js';
import { AUTHORIZE, cardMessages, PROCESSOR_KEY } from '../support/card-messages.js';

interface Decision {
  messageId: string;
  responseCode: string;
  approved: boolean;
  decidedBy: string;
  reason: string;
  transactionId: string | null;
}

const { message } = cardMessages(500000, 'FND');

/**
 * The funds check over the whole stack. The demo account starts at 100.00 available, no overdraft;
 * the aggregator's webhook approves everything, so every refusal here is the issuer's own.
 */
describe('a card spends only what its account has', () => {
  let stack: TestStack;
  let receiver: Awaited<ReturnType<typeof startWebhookReceiver>>;
  let replica: HttpService;
  const started: HttpService[] = [];

  const authorize = async (input: Record<string, unknown>) => {
    const response = await stack.graphql<{ authorizeCardMessage: Decision }>(AUTHORIZE, { input }, { 'x-service-key': PROCESSOR_KEY });
    if (response.body.errors) throw new Error(JSON.stringify(response.body.errors));
    return response.body.data!.authorizeCardMessage;
  };
  /** The same mutation at the second cards replica, as the gateway calls a subgraph; its holds expire after 1 s. */
  const atReplica = async (input: Record<string, unknown>) => {
    const principal = signPrincipal({ kind: 'service', service: 'card-processor' }, stack.config.internalSecret);
    const response = await fetch(`${replica.url}/graphql`, { method: 'POST', headers: { 'content-type': 'application/json', 'x-internal-principal': principal }, body: JSON.stringify({ query: AUTHORIZE, variables: { input } }) });
    const body = (await response.json()) as GraphQLBody<{ authorizeCardMessage: Decision }>;
    if (body.errors) throw new Error(JSON.stringify(body.errors));
    return body.data!.authorizeCardMessage;
  };
  const account = () => stack.mongo.db('payments').collection<{ _id: string; balance: number; availableBalance: number }>('accounts').findOne({ _id: DEMO.accountId });
  /** Payments' balance once every decided message is carried to it. */
  const settledBalance = async () => {
    await until(() => stack.mongo.db('cards').collection('cardMessages').countDocuments({ dtsPublished: null }), (n) => n === 0, 15_000);
    return (await account())!.balance;
  };

  beforeAll(async () => {
    receiver = await startWebhookReceiver(DEMO.webhook.secret);
    stack = await startTestStack({ SERVICE_KEYS: `card-processor=${PROCESSOR_KEY}` });
    await stack.mongo.db('cards').collection('webhookConfigs').updateOne({ _id: DEMO.aggregatorId as never }, { $set: { url: receiver.url, timeoutMs: 1000 } });
    receiver.setMode({ reply: '00' });
    // Before card authorization first meets the account: its spending balance starts from this.
    await stack.mongo.db('payments').collection('accounts').updateOne({ _id: DEMO.accountId as never }, { $set: { balance: 10_000, availableBalance: 10_000 } });
    replica = await startCards({ config: { ...stack.config, ports: { ...stack.config.ports, cards: 0 }, cardHoldExpirySeconds: 1 }, logger: createLogger('error'), mongo: stack.mongo, bus: stack.bus });
    started.push(replica);
  });
  afterAll(async () => {
    for (const service of started) await service.close();
    await stack.stop();
    await receiver.close();
  });

  it('declines 51 a purchase above the available balance although the aggregator approves it, and moves no money', async () => {
    const tooMuch = message({ amount: 150 });
    const declined = await authorize(tooMuch);
    expect(declined).toMatchObject({ responseCode: '51', approved: false, decidedBy: 'funds', transactionId: null });
    // The aggregator was asked and said 00: the refusal is the issuer's.
    expect(receiver.received.filter((w) => w.payload.rrn === tooMuch.rrn)).toHaveLength(1);
    expect(await settledBalance()).toBe(10_000);
    // What the account has is spent, exactly.
    expect(await authorize(message({ amount: 40 }))).toMatchObject({ responseCode: '00', approved: true });
    expect(await settledBalance()).toBe(6_000);
    // A copy of the declined purchase gets the same answer.
    expect(await authorize(tooMuch)).toEqual(declined);
  });

  it('approves exactly one of two purchases on the account that each fit but not together, decided at two replicas at once', async () => {
    // The aggregator holds its answers, so both are being decided at the same time.
    receiver.setMode({ reply: '00', delayMs: 300 });
    const decisions = await Promise.all([authorize(message({ amount: 35 })), atReplica(message({ amount: 35 }))]);
    receiver.setMode({ reply: '00' });
    expect(decisions.map((d) => d.responseCode).sort()).toEqual(['00', '51']);
    expect(await settledBalance()).toBe(2_500);
  });

  it("holds an authorization's amount against later purchases until it is reversed", async () => {
    const authorization = message({ messageType: '0100', amount: 20 });
    expect(await authorize(authorization)).toMatchObject({ responseCode: '00', transactionId: null });
    // 25.00 available, 20.00 of it held.
    expect(await authorize(message({ amount: 10 }))).toMatchObject({ responseCode: '51', decidedBy: 'funds' });
    const reversal = await authorize(message({ messageType: '0420', amount: 20, originalStan: authorization.stan }));
    expect(reversal).toMatchObject({ responseCode: '00', transactionId: null });
    expect(reversal.reason).toMatch(/hold is released/);
    // Released once: a second reversal of it releases nothing.
    expect((await authorize(message({ messageType: '0420', amount: 20, originalStan: authorization.stan }))).reason).toMatch(/holds nothing/);
    expect(await authorize(message({ amount: 10 }))).toMatchObject({ responseCode: '00' });
    expect(await settledBalance()).toBe(1_500);
  });

  it("refuses a completion whose originalStan is not a stan, naming the field, and stores nothing", async () => {
    const bad = message({ messageType: '0220', amount: 1, originalStan: '12ab' });
    const response = await stack.graphql<{ authorizeCardMessage: Decision }>(AUTHORIZE, { input: bad }, { 'x-service-key': PROCESSOR_KEY });
    expect(response.body.errors?.[0]?.extensions).toMatchObject({ code: 'VALIDATION_FAILED', field: 'originalStan' });
    expect(await stack.mongo.db('cards').collection('cardMessages').countDocuments({ rrn: bad.rrn })).toBe(0);
  });

  it('completes an authorization with its advice: the hold goes, the completed amount is spent', async () => {
    const authorization = message({ messageType: '0100', amount: 10 });
    expect(await authorize(authorization)).toMatchObject({ responseCode: '00' });
    // 15.00 available, 10.00 held: 12.00 fits only with the hold released, which the completion does.
    const completion = await authorize(message({ messageType: '0220', amount: 12, originalStan: authorization.stan }));
    expect(completion).toMatchObject({ responseCode: '00', transactionId: expect.stringMatching(/^txn_/) as string });
    expect(await settledBalance()).toBe(300);
    expect(await authorize(message({ amount: 3.01 }))).toMatchObject({ responseCode: '51' });
  });

  it('releases a hold once its period is over', async () => {
    // At the replica, whose holds last 1 s.
    const authorization = message({ messageType: '0100', amount: 2 });
    expect(await atReplica(authorization)).toMatchObject({ responseCode: '00' });
    expect(await authorize(message({ amount: 2 }))).toMatchObject({ responseCode: '51' });
    const spending = stack.mongo.db('cards').collection<{ _id: string; holdIds: string[] }>('spendingAccounts');
    await until(() => spending.findOne({ _id: DEMO.accountId }), (doc) => doc !== null && doc.holdIds.length === 0, 10_000);
    expect(await authorize(message({ amount: 2 }))).toMatchObject({ responseCode: '00' });
    // An expired authorization's reversal releases nothing more.
    expect((await authorize(message({ messageType: '0420', amount: 2, originalStan: authorization.stan }))).reason).toMatch(/holds nothing/);
    expect(await authorize(message({ amount: 1.01 }))).toMatchObject({ responseCode: '51' });
    expect(await authorize(message({ amount: 1 }))).toMatchObject({ responseCode: '00' });
    expect(await settledBalance()).toBe(0);
    // Everything posted and nothing held: what cards may spend is what payments has, exactly.
    const [kept, ledger] = await Promise.all([
      stack.mongo.db('cards').collection<{ _id: string; spendable: number; unposted: string[]; holdIds: string[]; holds: string[] }>('spendingAccounts').findOne({ _id: DEMO.accountId }),
      account(),
    ]);
    expect(kept).toMatchObject({ spendable: ledger!.availableBalance, unposted: [], holdIds: [], holds: [] });
  });
});

describe('an overdraft limit', () => {
  let stack: TestStack;
  let receiver: Awaited<ReturnType<typeof startWebhookReceiver>>;

  beforeAll(async () => {
    receiver = await startWebhookReceiver(DEMO.webhook.secret);
    stack = await startTestStack({ SERVICE_KEYS: `card-processor=${PROCESSOR_KEY}`, CARD_OVERDRAFT_LIMIT: '50' });
    await stack.mongo.db('cards').collection('webhookConfigs').updateOne({ _id: DEMO.aggregatorId as never }, { $set: { url: receiver.url, timeoutMs: 1000 } });
    receiver.setMode({ reply: '00' });
    await stack.mongo.db('payments').collection('accounts').updateOne({ _id: DEMO.accountId as never }, { $set: { balance: 1_000, availableBalance: 1_000 } });
  });
  afterAll(async () => {
    await stack.stop();
    await receiver.close();
  });

  const authorize = async (input: Record<string, unknown>) => (await stack.graphql<{ authorizeCardMessage: Decision }>(AUTHORIZE, { input }, { 'x-service-key': PROCESSOR_KEY })).body.data!.authorizeCardMessage;

  it('gives back, once, what a decision interrupted before its insert took, and answers a later copy with that', async () => {
    // 10.00 available and 50 of overdraft: 60.00, 55.00 after this purchase.
    expect(await authorize(message({ amount: 5 }))).toMatchObject({ responseCode: '00' });
    const spending = new SpendingBalances(stack.mongo.db('cards'), createGraphClient(stack.config, 'cards'), { overdraftLimit: 50, holdExpirySeconds: 3600 }, createLogger('silent'));
    const kept = () => stack.mongo.db('cards').collection<{ _id: string; spendable: number }>('spendingAccounts').findOne({ _id: DEMO.accountId });
    // Two decisions that took their amount and stopped there, as a crash would stop them.
    const purchase = message({ amount: 10 });
    const authorization = message({ messageType: '0100', amount: 5 });
    const idOf = (input: ReturnType<typeof message>) => `msg_${input.messageType}_${input.svcCardId}_${input.stan}_${input.rrn}`;
    expect(await spending.spend(DEMO.accountId, 'USD', idOf(purchase), minor(1_000))).toMatchObject({ kind: 'covered' });
    expect(await spending.hold(DEMO.accountId, 'USD', { messageId: idOf(authorization), amount: minor(500), holdExpires: new Date(Date.now() + 3_600_000) })).toMatchObject({ kind: 'covered' });
    expect((await kept())!.spendable).toBe(4_000);
    // Left alone for a minute after first found unstored, then given back, once.
    const start = Date.now();
    expect(await spending.reconcile(60_000, start)).toBe(0);
    expect(await spending.reconcile(60_000, start + 30_000)).toBe(0);
    expect(await spending.reconcile(60_000, start + 60_000)).toBe(2);
    expect(await spending.reconcile(60_000, start + 120_000)).toBe(0);
    expect((await kept())!.spendable).toBe(5_500);
    // The message comes again: it finds the record that settled it, and takes nothing.
    expect(await authorize(purchase)).toMatchObject({ responseCode: '96', approved: false, transactionId: null });
    expect((await kept())!.spendable).toBe(5_500);
  });

  it('lets a card take its account that far below zero, and not a cent further', async () => {
    expect(await authorize(message({ amount: 55.01 }))).toMatchObject({ responseCode: '51', decidedBy: 'funds' });
    expect(await authorize(message({ amount: 55 }))).toMatchObject({ responseCode: '00' });
    expect(await authorize(message({ amount: 0.01 }))).toMatchObject({ responseCode: '51' });
    await until(() => stack.mongo.db('cards').collection('cardMessages').countDocuments({ dtsPublished: null }), (n) => n === 0, 15_000);
    expect((await stack.mongo.db('payments').collection<{ _id: string; balance: number }>('accounts').findOne({ _id: DEMO.accountId }))!.balance).toBe(-5_000);
  });
});
