import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { DEMO } from '../../platform/domain/demo.js';
import { createGraphClient } from '../../platform/graphql/graph-client.js';
import type { HttpService } from '../../platform/http/server.js';
import { Outbox } from '../../platform/messaging/outbox.js';
import { createLogger } from '../../platform/runtime/logger.js';
import { PRINCIPAL_HEADER, signPrincipal } from '../../platform/security/signed-headers.js';
import { configFor } from '../../platform/runtime/config-slices.js';
import { startWebhookReceiver } from '../../scripts/lib/webhook-receiver.js';
import { CardAuthorizer } from '../../subgraphs/cards/src/authorization/card-authorizer.js';
import { cardMessagesCollection } from '../../subgraphs/cards/src/authorization/datasource.js';
import { AccountFunds, type FundsRequest } from '../../subgraphs/cards/src/authorization/funds.js';
import { RestrictionReadModel } from '../../subgraphs/cards/src/authorization/restriction-model.js';
import { start as startCards } from '../../subgraphs/cards/src/index.js';
import { CARD_HOLDS_PER_ACCOUNT } from '../../subgraphs/payments/src/accounts/card-holds.js';
import { startTestStack, until, type TestStack } from '../support/harness.js';
import { AUTHORIZE, authorizeAt, authorizeThrough, cardMessages, PROCESSOR_KEY, type CardDecision } from '../support/card-messages.js';

interface StoredAccount {
  _id: string;
  balance: number;
  availableBalance: number;
  authorizationHolds?: string[];
  purchaseHolds?: string[];
}

const { message, nextStan } = cardMessages(700000, 'FND');
const HOLD = 'mutation ($input: CardFundsHoldInput!) { holdCardFunds(input: $input) }';

/** The stack's payments account of the demo user, and what its holds add up to. */
function accountOf(stack: TestStack) {
  const read = () => stack.mongo.db('payments').collection<StoredAccount>('accounts').findOne({ _id: DEMO.accountId });
  return {
    read,
    /** Once every decided message is carried to payments: the account, after checking that what is available is the balance less every hold. */
    async settled(): Promise<StoredAccount> {
      await until(
        () => cardMessagesCollection(stack.mongo.db('cards')).countDocuments({ dtsPublished: null }),
        (n) => n === 0,
        15_000,
      );
      const account = (await read())!;
      const held = [...(account.authorizationHolds ?? []), ...(account.purchaseHolds ?? [])].reduce(
        (sum, entry) => sum + Number(entry.split('|')[1]),
        0,
      );
      expect(account.availableBalance).toBe(account.balance - held);
      return account;
    },
  };
}

/**
 * The funds check over the whole stack. The demo account starts at 100.00 with no overdraft; the
 * aggregator's webhook approves everything, so every refusal here is the issuer's own.
 */
describe('a card spends only what its account has', () => {
  let stack: TestStack;
  let receiver: Awaited<ReturnType<typeof startWebhookReceiver>>;
  let replica: HttpService;
  let authorize: (input: Record<string, unknown>) => Promise<CardDecision>;
  let account: ReturnType<typeof accountOf>;
  let holds = 0;

  /** A call as the cards service makes it: through the gateway, with its signed principal. */
  const asCards = <T>(query: string, variables: Record<string, unknown>) =>
    stack.graphql<T>(query, variables, {
      [PRINCIPAL_HEADER]: signPrincipal({ kind: 'service', service: 'cards' }, stack.config.internalSecret, Date.now(), 'gateway'),
    });
  /** A hold as card authorization asks for it: its outcome, or the first error's extensions. */
  const hold = async (input: Partial<Record<string, unknown>>) => {
    const response = await asCards<{ holdCardFunds: string }>(HOLD, {
      input: {
        holdId: `test.${(holds += 1)}`,
        SvcAccountId: DEMO.accountId,
        SvcUserId: DEMO.userId,
        amount: '1.00',
        currency: 'USD',
        authorization: true,
        ...input,
      },
    });
    return response.body.data?.holdCardFunds ?? response.body.errors?.[0]?.extensions;
  };

  /** The same mutation at a second cards replica, as the gateway calls a subgraph. */
  let atReplica: (input: Record<string, unknown>) => Promise<CardDecision>;

  beforeAll(async () => {
    receiver = await startWebhookReceiver(DEMO.webhook.secret);
    stack = await startTestStack({ SERVICE_KEYS: `card-processor=${PROCESSOR_KEY}` });
    authorize = authorizeThrough(stack);
    account = accountOf(stack);
    await stack.mongo
      .db('cards')
      .collection('webhookConfigs')
      .updateOne({ _id: DEMO.aggregatorId as never }, { $set: { url: receiver.url, timeoutMs: 1000 } });
    receiver.setMode({ reply: '00' });
    await stack.mongo
      .db('payments')
      .collection('accounts')
      .updateOne({ _id: DEMO.accountId as never }, { $set: { balance: 10_000, availableBalance: 10_000 } });
    replica = await startCards({
      config: configFor('cards', { ...stack.config, ports: { ...stack.config.ports, cards: 0 } }),
      logger: createLogger('error'),
      mongo: stack.mongo,
      bus: stack.bus,
    });
    atReplica = authorizeAt(replica, stack.config.internalSecret);
  });
  afterAll(async () => {
    await replica.close();
    await stack.stop();
    await receiver.close();
  });

  it('declines 51 a purchase above the available balance although the aggregator approves it, and moves no money', async () => {
    const tooMuch = message({ amount: 150 });
    const declined = await authorize(tooMuch);
    expect(declined).toMatchObject({ responseCode: '51', approved: false, decidedBy: 'funds', transactionId: null });
    // The aggregator was asked and said 00: the refusal is the issuer's.
    expect(receiver.received.filter((w) => w.payload.rrn === tooMuch.rrn)).toHaveLength(1);
    expect(await account.settled()).toMatchObject({ balance: 10_000, availableBalance: 10_000 });
    // What the account has is spent, exactly; while the purchase waits for its posting, its hold keeps it from being spent twice.
    expect(await authorize(message({ amount: 40 }))).toMatchObject({ responseCode: '00', approved: true });
    expect(await account.settled()).toMatchObject({ balance: 6_000, availableBalance: 6_000, purchaseHolds: [] });
    // A copy of the declined purchase gets the same answer.
    expect(await authorize(tooMuch)).toEqual(declined);
  });

  it('approves exactly one of two purchases on the account that each fit but not together, decided at two replicas at once', async () => {
    // The aggregator holds its answers, so both are being decided at the same time.
    receiver.setMode({ reply: '00', delayMs: 300 });
    const decisions = await Promise.all([authorize(message({ amount: 35 })), atReplica(message({ amount: 35 }))]);
    receiver.setMode({ reply: '00' });
    expect(decisions.map((d) => d.responseCode).sort()).toEqual(['00', '51']);
    expect(await account.settled()).toMatchObject({ balance: 2_500, availableBalance: 2_500 });
  });

  it('keeps one take when a copy of a purchase is decided again after the first was posted', async () => {
    // A second authorizer whose hold waits at a gate: it read no earlier copy, then the first copy
    // is decided, stored and posted elsewhere before it holds (the race a slow aggregator opens).
    let open!: () => void;
    const gate = new Promise<void>((resolve) => (open = resolve));
    let holding!: () => void;
    const waiting = new Promise<void>((resolve) => (holding = resolve));
    const funds = new AccountFunds(createGraphClient(stack.config, 'cards'), createLogger('silent'));
    const gated = Object.assign(Object.create(funds) as AccountFunds, {
      hold: async (request: FundsRequest) => {
        holding();
        await gate;
        return funds.hold(request);
      },
    });
    const db = stack.mongo.db('cards');
    const rules = new RestrictionReadModel(stack.bus, createGraphClient(stack.config, 'cards'), createLogger('silent')).start();
    const late = new CardAuthorizer({
      db,
      graph: createGraphClient(stack.config, 'cards'),
      rules,
      funds: gated,
      messageOutbox: new Outbox(db, [], createLogger('silent'), { collection: cardMessagesCollection(db).collectionName, prune: false }),
      allowInternalWebhooks: true,
    });
    try {
      const purchase = message({ amount: 5 });
      const second = late.decide({ ...purchase, amount: String(purchase.amount) }, createLogger('silent'));
      await waiting;
      const first = await authorize(purchase);
      expect(first).toMatchObject({ responseCode: '00' });
      expect(await account.settled()).toMatchObject({ balance: 2_000, availableBalance: 2_000 });
      open();
      // It takes the amount again, loses the insert to the first copy, and gives back what it took.
      expect(await second).toMatchObject({ messageId: first.messageId, responseCode: '00', transactionId: first.transactionId });
      expect(await account.settled()).toMatchObject({ balance: 2_000, availableBalance: 2_000, purchaseHolds: [] });
    } finally {
      await rules.stop();
    }
  });

  it("holds an authorization's amount against later purchases until it is reversed, once", async () => {
    const authorization = message({ messageType: '0100', amount: 15 });
    expect(await authorize(authorization)).toMatchObject({ responseCode: '00', transactionId: null });
    // 20.00 available, 15.00 of it held.
    expect(await account.settled()).toMatchObject({ balance: 2_000, availableBalance: 500 });
    expect(await authorize(message({ amount: 10 }))).toMatchObject({ responseCode: '51', decidedBy: 'funds' });
    const reversal = await authorize(message({ messageType: '0420', amount: 15, originalStan: authorization.stan }));
    expect(reversal).toMatchObject({ responseCode: '00', transactionId: null });
    expect(reversal.reason).toMatch(/still holds is released/);
    expect(await account.settled()).toMatchObject({ balance: 2_000, availableBalance: 2_000, authorizationHolds: [] });
    // A second reversal of it releases nothing.
    expect((await authorize(message({ messageType: '0420', amount: 15, originalStan: authorization.stan }))).reason).toMatch(
      /already reversed/,
    );
    expect(await account.settled()).toMatchObject({ availableBalance: 2_000 });
  });

  it('refuses a completion whose originalStan is not a stan, naming the field, and stores nothing', async () => {
    const bad = message({ messageType: '0220', amount: 1, originalStan: '12ab' });
    const response = await stack.graphql<{ authorizeCardMessage: CardDecision }>(
      AUTHORIZE,
      { input: bad },
      { 'x-service-key': PROCESSOR_KEY },
    );
    expect(response.body.errors?.[0]?.extensions).toMatchObject({ code: 'VALIDATION_FAILED', field: 'originalStan' });
    expect(await cardMessagesCollection(stack.mongo.db('cards')).countDocuments({ rrn: bad.rrn })).toBe(0);
  });

  it('completes an authorization with its advice: the hold goes, the completed amount is spent', async () => {
    const authorization = message({ messageType: '0100', amount: 10 });
    expect(await authorize(authorization)).toMatchObject({ responseCode: '00' });
    // 20.00 available, 10.00 held: 12.00 fits only with the hold released, which the completion does in the same update.
    const completion = await authorize(message({ messageType: '0220', amount: 12, originalStan: authorization.stan }));
    expect(completion).toMatchObject({ responseCode: '00', transactionId: expect.stringMatching(/^txn_/) as string });
    expect(await account.settled()).toMatchObject({ balance: 800, availableBalance: 800, authorizationHolds: [], purchaseHolds: [] });
    expect(await authorize(message({ amount: 8.01 }))).toMatchObject({ responseCode: '51' });
    // Completed once: its reversal finds nothing held, and releases nothing.
    expect(await authorize(message({ messageType: '0420', amount: 10, originalStan: authorization.stan }))).toMatchObject({
      responseCode: '00',
      transactionId: null,
    });
    expect(await account.settled()).toMatchObject({ balance: 800, availableBalance: 800 });
  });

  it('reverses the purchase, not the authorization, that shares the stan it names', async () => {
    const stan = nextStan();
    const authorization = message({ messageType: '0100', amount: 1, stan });
    const purchase = message({ amount: 2, stan });
    expect(await authorize(authorization)).toMatchObject({ responseCode: '00' });
    expect(await authorize(purchase)).toMatchObject({ responseCode: '00' });
    const reversal = await authorize(message({ messageType: '0420', amount: 2, originalStan: stan }));
    expect(reversal).toMatchObject({ responseCode: '00', transactionId: expect.stringMatching(/^txn_/) as string });
    // The purchase credited back; the authorization still holds its amount.
    expect(await account.settled()).toMatchObject({ balance: 800, availableBalance: 700 });
    const held = await cardMessagesCollection(stack.mongo.db('cards')).findOne({ stan, messageType: '0100' });
    const released = await asCards<{ releaseCardHolds: number }>(
      'mutation ($input: [CardHoldReleaseInput!]!) { releaseCardHolds(input: $input) }',
      { input: [{ SvcAccountId: DEMO.accountId, holdId: held!.holdId }] },
    );
    expect(released.body.data?.releaseCardHolds).toBe(1);
    expect(await account.settled()).toMatchObject({ balance: 800, availableBalance: 800, authorizationHolds: [] });
  });

  it("puts an authorization's hold back when the completion that took it over loses to another copy", async () => {
    await stack.mongo
      .db('payments')
      .collection('accounts')
      .updateOne({ _id: DEMO.accountId as never }, { $set: { balance: 10_000, availableBalance: 10_000 } });
    expect(await hold({ holdId: 'auth.undo', amount: '20.00' })).toBe('HELD');
    expect(await hold({ holdId: 'completion.undo', amount: '25.00', authorization: false, completes: 'auth.undo' })).toBe('HELD');
    expect(await account.read()).toMatchObject({ availableBalance: 10_000 - 2_500, authorizationHolds: [] });
    const undone = await asCards<{ releaseCardHolds: number }>(
      'mutation ($input: [CardHoldReleaseInput!]!) { releaseCardHolds(input: $input, undo: true) }',
      {
        input: [
          { SvcAccountId: DEMO.accountId, holdId: 'completion.undo' },
          { SvcAccountId: DEMO.accountId, holdId: 'completion.undo' },
        ],
      },
    );
    expect(undone.body.data?.releaseCardHolds).toBe(1);
    const after = (await account.read())!;
    expect(after).toMatchObject({ availableBalance: 10_000 - 2_000, purchaseHolds: [] });
    expect(after.authorizationHolds).toHaveLength(1);
    expect(after.authorizationHolds![0]).toMatch(/^auth\.undo\|2000\|/);
    const released = await asCards<{ releaseCardHolds: number }>(
      'mutation ($input: [CardHoldReleaseInput!]!) { releaseCardHolds(input: $input) }',
      { input: [{ SvcAccountId: DEMO.accountId, holdId: 'auth.undo' }] },
    );
    expect(released.body.data?.releaseCardHolds).toBe(1);
    expect(await account.read()).toMatchObject({ availableBalance: 10_000, authorizationHolds: [] });
  });

  it("takes a purchase's hold out in the update that posts it, once however often it is sent, and posts in full one whose hold is gone", async () => {
    await stack.mongo
      .db('payments')
      .collection('accounts')
      .updateOne({ _id: DEMO.accountId as never }, { $set: { balance: 1_000, availableBalance: 1_000 } });
    const record = (messageId: string, holdId: string) =>
      asCards<{ recordCardTransactions: { recorded: number } }>(
        'mutation ($input: [CardTransactionInput!]!) { recordCardTransactions(input: $input) { recorded } }',
        {
          input: [
            {
              messageId,
              SvcAccountId: DEMO.accountId,
              SvcUserId: DEMO.userId,
              SvcCardId: DEMO.cardIds[0],
              direction: 'debit',
              amount: '4.00',
              currency: 'USD',
              holdId,
            },
          ],
        },
      );
    expect(await hold({ holdId: 'purchase.posted', amount: '4.00', authorization: false })).toBe('HELD');
    expect(await account.read()).toMatchObject({ balance: 1_000, availableBalance: 600 });
    const messageId = `posting_${Date.now()}`;
    expect((await record(messageId, 'purchase.posted')).body.data?.recordCardTransactions.recorded).toBe(1);
    expect(await account.read()).toMatchObject({ balance: 600, availableBalance: 600, purchaseHolds: [] });
    expect((await record(messageId, 'purchase.posted')).body.data?.recordCardTransactions.recorded).toBe(0);
    expect(await account.read()).toMatchObject({ balance: 600, availableBalance: 600 });
    // A hold that expired or was given back before the posting: the posting takes the whole amount.
    expect((await record(`${messageId}_late`, 'purchase.gone')).body.data?.recordCardTransactions.recorded).toBe(1);
    expect(await account.read()).toMatchObject({ balance: 200, availableBalance: 200 });
  });

  it('refuses a hold past the open holds an account may have, and names a wrong account or currency', async () => {
    await stack.mongo
      .db('payments')
      .collection('accounts')
      .updateOne({ _id: DEMO.accountId as never }, { $set: { balance: 1_000_000, availableBalance: 1_000_000 } });
    const outcomes = [];
    const cap = CARD_HOLDS_PER_ACCOUNT.authorizationHolds;
    for (let i = 0; i <= cap; i += 1) outcomes.push(await hold({ amount: '0.01' }));
    expect(outcomes.slice(0, cap).every((outcome) => outcome === 'HELD')).toBe(true);
    expect(outcomes.at(-1)).toBe('TOO_MANY_HOLDS');
    expect(await hold({ currency: 'EUR' })).toMatchObject({ code: 'VALIDATION_FAILED', field: 'currency' });
    expect(await hold({ SvcUserId: 'someone_else' })).toMatchObject({ code: 'VALIDATION_FAILED', field: 'SvcAccountId' });
    expect(await hold({ holdId: 'bad|id' })).toMatchObject({ code: 'VALIDATION_FAILED', field: 'holdId' });
    const stored = (await account.read())!;
    expect(stored.authorizationHolds).toHaveLength(cap);
    expect(stored.availableBalance).toBe(1_000_000 - cap);
  });

  it('holds only for the cards service', async () => {
    const response = await stack.graphql<{ holdCardFunds: string }>(
      HOLD,
      {
        input: {
          holdId: 'x.1',
          SvcAccountId: DEMO.accountId,
          SvcUserId: DEMO.userId,
          amount: '1.00',
          currency: 'USD',
          authorization: true,
        },
      },
      { 'x-service-key': PROCESSOR_KEY },
    );
    expect(response.body.errors?.[0]?.extensions?.code).toBe('FORBIDDEN');
  });
});

describe('an overdraft limit, advices and expiry', () => {
  let stack: TestStack;
  let receiver: Awaited<ReturnType<typeof startWebhookReceiver>>;
  let authorize: (input: Record<string, unknown>) => Promise<CardDecision>;
  let account: ReturnType<typeof accountOf>;

  beforeAll(async () => {
    receiver = await startWebhookReceiver(DEMO.webhook.secret);
    // Authorizations are held 3 s here, so the sweep runs every 0.75 s; a card may take its account 50.00 below zero.
    stack = await startTestStack({
      SERVICE_KEYS: `card-processor=${PROCESSOR_KEY}`,
      CARD_OVERDRAFT_LIMIT: '50',
      CARD_HOLD_EXPIRY_SECONDS: '3',
    });
    authorize = authorizeThrough(stack);
    account = accountOf(stack);
    await stack.mongo
      .db('cards')
      .collection('webhookConfigs')
      .updateOne({ _id: DEMO.aggregatorId as never }, { $set: { url: receiver.url, timeoutMs: 1000 } });
    receiver.setMode({ reply: '00' });
    await stack.mongo
      .db('payments')
      .collection('accounts')
      .updateOne({ _id: DEMO.accountId as never }, { $set: { balance: 1_000, availableBalance: 1_000 } });
  });
  afterAll(async () => {
    await stack.stop();
    await receiver.close();
  });

  it('lets a card take its account as far below zero as the overdraft limit, and not a cent further', async () => {
    expect(await authorize(message({ amount: 60.01 }))).toMatchObject({ responseCode: '51', decidedBy: 'funds' });
    expect(await authorize(message({ amount: 60 }))).toMatchObject({ responseCode: '00' });
    expect(await authorize(message({ amount: 0.01 }))).toMatchObject({ responseCode: '51' });
    expect(await account.settled()).toMatchObject({ balance: -5_000, availableBalance: -5_000 });
  });

  it('acknowledges an advice the account cannot cover: the network made the sale, and its posting takes the amount', async () => {
    const advice = await authorize(message({ messageType: '0220', amount: 1 }));
    expect(advice).toMatchObject({ responseCode: '00', transactionId: expect.stringMatching(/^txn_/) as string });
    expect(await account.settled()).toMatchObject({ balance: -5_100, availableBalance: -5_100, purchaseHolds: [] });
  });

  it('releases a hold once its period is over', async () => {
    await stack.mongo
      .db('payments')
      .collection('accounts')
      .updateOne({ _id: DEMO.accountId as never }, { $set: { balance: 1_000, availableBalance: 1_000 } });
    const authorization = message({ messageType: '0100', amount: 30 });
    expect(await authorize(authorization)).toMatchObject({ responseCode: '00' });
    expect(await authorize(message({ amount: 31 }))).toMatchObject({ responseCode: '51' });
    const released = await until(account.read, (doc) => doc !== null && (doc.authorizationHolds ?? []).length === 0, 10_000);
    expect(released).toMatchObject({ balance: 1_000, availableBalance: 1_000 });
    expect(await authorize(message({ amount: 31 }))).toMatchObject({ responseCode: '00' });
    // A reversal of the expired authorization releases nothing more.
    expect(await authorize(message({ messageType: '0420', amount: 30, originalStan: authorization.stan }))).toMatchObject({
      responseCode: '00',
      transactionId: null,
    });
    expect(await account.settled()).toMatchObject({ balance: -2_100, availableBalance: -2_100 });
  });
});
