import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { CardTransactionPayload } from '../../platform/contracts/events.js';
import { DEMO } from '../../platform/domain/demo.js';
import { minor, toMinor, ZERO } from '../../platform/money/money.js';
import { accountsCollection } from '../../subgraphs/payments/src/accounts/datasource.js';
import {
  accountMonth,
  transactionsCollection,
  type TransactionDocument,
} from '../../subgraphs/payments/src/accounts/transactions-datasource.js';
import { startTestStack, type TestStack } from '../support/harness.js';

/*
 * recordCardTransactions: card authorization's outbox forwarding of approved card messages, each
 * recorded and its balance moved exactly once, whatever is sent again, sent at once, or left
 * half done by a crash (the crashes are the states the posting leaves, written directly).
 */

/** Posting is the cards subgraph's: a key named after it acts as that service (allowed outside production). */
const CARDS_KEY = 'cards-key-for-the-card-postings-tests-0123456789';
const PROCESSOR_KEY = 'card-processor-key-for-the-card-postings-tests-01';

/** What the card authorization's forwarder sends: the event's transaction with its messageId. */
type CardTransactionInput = Omit<CardTransactionPayload, 'narrative' | 'reference' | 'holdId'> & {
  messageId: string;
  holdId?: string | null;
  narrative?: string;
  reference?: string;
};
interface Recorded {
  recorded: number;
  alreadyRecorded: number;
}

const RECORD_MANY = 'mutation ($input: [CardTransactionInput!]!) { recordCardTransactions(input: $input) { recorded alreadyRecorded } }';
const RECORD_ONE = 'mutation ($input: CardTransactionInput!) { recordCardTransaction(input: $input) { transactionId amount } }';

let messageCounter = 0;
/** A card message of the demo account, a new messageId each time unless given. */
const message = (direction: 'debit' | 'credit', amount: string, overrides: Partial<CardTransactionInput> = {}): CardTransactionInput => ({
  messageId: `post_${process.pid}_${(messageCounter += 1)}`,
  SvcAccountId: DEMO.accountId,
  SvcUserId: DEMO.userId,
  SvcCardId: DEMO.cardIds[0],
  direction,
  amount,
  currency: 'USD',
  narrative: 'Corner Grocery',
  reference: `RRN${String(messageCounter).padStart(9, '0')}`,
  ...overrides,
});
/** The signed amount a message moves the balance by. */
const signed = (input: CardTransactionInput): number =>
  (input.direction === 'debit' ? -1 : 1) * toMinor(input.amount, input.currency, 'amount');
const total = (inputs: readonly CardTransactionInput[]): number => inputs.reduce((sum, input) => sum + signed(input), 0);
const idOf = (input: CardTransactionInput) => `txn_${input.messageId}`;

describe('recordCardTransactions: exactly-once card postings', () => {
  let stack: TestStack;
  const accounts = () => accountsCollection(stack.mongo.db('payments'));
  const transactions = () => transactionsCollection(stack.mongo.db('payments'));

  const send = (inputs: readonly CardTransactionInput[], key = CARDS_KEY) =>
    stack.graphql<{ recordCardTransactions: Recorded }>(RECORD_MANY, { input: inputs }, { 'x-service-key': key });
  const record = async (inputs: readonly CardTransactionInput[]): Promise<Recorded> => {
    const response = await send(inputs);
    if (response.body.errors) throw new Error(JSON.stringify(response.body.errors));
    return response.body.data!.recordCardTransactions;
  };
  const balances = async () => {
    const account = await accounts().findOne({ _id: DEMO.accountId });
    return { balance: account!.balance as number, availableBalance: account!.availableBalance as number };
  };
  /** The stored record of a message as the posting's first step writes it: inserted, not posted. */
  const unposted = (input: CardTransactionInput): TransactionDocument => {
    const id = idOf(input);
    const amount = toMinor(input.amount, input.currency, 'amount');
    const debit = input.direction === 'debit';
    const now = new Date();
    return {
      _id: id,
      transactionId: id,
      SvcAccountId: input.SvcAccountId,
      SvcUserId: input.SvcUserId,
      SvcCardId: input.SvcCardId,
      transactionIdBO: null,
      debitTransactionId: debit ? id : null,
      creditTransactionId: debit ? null : id,
      sourceSvcAccountId: debit ? input.SvcAccountId : null,
      destinationSvcAccountId: debit ? null : input.SvcAccountId,
      amount: minor(signed(input)),
      debit: debit ? amount : ZERO,
      credit: debit ? ZERO : amount,
      currency: input.currency,
      transactionState: 'confirmed',
      isPending: false,
      isComplete: true,
      isDeclined: false,
      txnType: 'card',
      typeName: debit ? 'Card payment' : 'Card reversal',
      narrative: input.narrative ?? null,
      narrativeSource: null,
      narrativeDestination: input.narrative ?? null,
      reference: input.reference ?? null,
      attachments: null,
      labels: [],
      details: { memos: [] },
      internal: null,
      dtsRecorded: now,
      dtsValue: now,
      dtsBooked: now,
      dtsCompleted: now,
      accountMonth: accountMonth(input.SvcAccountId, now),
      posted: false,
    };
  };
  /** A crash after the compare-and-set and before the marking: the record unposted, the balance moved, its id the account's last posting. */
  const crashAfterCompareAndSet = async (input: CardTransactionInput) => {
    await transactions().insertOne(unposted(input));
    const amount = minor(signed(input));
    await accounts().updateOne(
      { _id: DEMO.accountId },
      { $inc: { balance: amount, availableBalance: amount, postingSeq: 1 }, $set: { lastPostings: [idOf(input)] } },
    );
  };
  const postedFlags = async (inputs: readonly CardTransactionInput[]) =>
    (
      await transactions()
        .find({ _id: { $in: inputs.map(idOf) } })
        .toArray()
    ).map((doc) => doc.posted);

  beforeAll(async () => {
    stack = await startTestStack({ SERVICE_KEYS: `cards=${CARDS_KEY},card-processor=${PROCESSOR_KEY}` });
  });
  afterAll(async () => {
    await stack.stop();
  });

  it('records each message of a batch once and moves the balance by exactly their sum; the same batch again moves nothing', async () => {
    const batch = [
      message('debit', '12.34'),
      message('credit', '5'),
      message('debit', '0.01'),
      message('debit', '100.99'),
      message('credit', '7.50'),
      message('debit', '3'),
    ];
    const before = await balances();
    expect(await record(batch)).toEqual({ recorded: 6, alreadyRecorded: 0 });
    const after = await balances();
    expect(after.balance - before.balance).toBe(total(batch));
    expect(after.availableBalance - before.availableBalance).toBe(total(batch));
    expect(await postedFlags(batch)).toEqual(batch.map(() => true));
    const stored = await transactions().findOne({ _id: idOf(batch[0]!) });
    expect(stored).toMatchObject({
      SvcAccountId: DEMO.accountId,
      SvcCardId: DEMO.cardIds[0],
      amount: -1234,
      debit: 1234,
      credit: 0,
      typeName: 'Card payment',
      narrative: 'Corner Grocery',
    });

    expect(await record(batch)).toEqual({ recorded: 0, alreadyRecorded: 6 });
    expect(await balances()).toEqual(after);
    expect(await transactions().countDocuments({ _id: { $in: batch.map(idOf) } })).toBe(6);

    // The account's transactions read as before, the new ones among them.
    const token = await stack.loginDemo();
    const page = await stack.graphql<{
      me: {
        accounts: Array<{ SvcAccountId: string; transactions: { edges: Array<{ node: { transactionId: string; amount: string } }> } }>;
      };
    }>('{ me { accounts { SvcAccountId transactions(first: 10) { edges { node { transactionId amount } } } } } }', {}, { token });
    expect(page.body.errors).toBeUndefined();
    const nodes = page.body
      .data!.me.accounts.find((account) => account.SvcAccountId === DEMO.accountId)!
      .transactions.edges.map((edge) => edge.node);
    expect(nodes).toEqual(
      expect.arrayContaining([
        { transactionId: idOf(batch[0]!), amount: '-12.34' },
        { transactionId: idOf(batch[4]!), amount: '7.50' },
      ]),
    );
  });

  it('moves the balance once per distinct message when five overlapping batches arrive at once', async () => {
    const pool = Array.from({ length: 12 }, (_, i) =>
      message(i % 3 === 0 ? 'credit' : 'debit', `${i + 1}.${String(i * 7).padStart(2, '0')}`),
    );
    // Windows of six, three apart, the last wrapping round; one batch also carries a message twice.
    const batches = Array.from({ length: 5 }, (_, b) => Array.from({ length: 6 }, (_, k) => pool[(b * 3 + k) % pool.length]!));
    batches[2]!.push(pool[7]!);
    const before = await balances();
    const answers = await Promise.all(batches.map(record));
    const after = await balances();
    expect(after.balance - before.balance).toBe(total(pool));
    expect(after.availableBalance - before.availableBalance).toBe(total(pool));
    expect(answers.reduce((sum, answer) => sum + answer.recorded, 0)).toBe(pool.length);
    for (const [i, answer] of answers.entries()) expect(answer.recorded + answer.alreadyRecorded).toBe(batches[i]!.length);
    expect(await postedFlags(pool)).toEqual(pool.map(() => true));
  });

  it('posts a batch that spans accounts with one compare-and-set each, once, when two copies of it arrive at once', async () => {
    const others = ['post_account_a', 'post_account_b'];
    await accounts().insertMany(
      others.map((id, i) => ({
        _id: id,
        SvcAccountId: id,
        SvcUserId: DEMO.userId,
        type: 'checking',
        name: `Other ${i}`,
        currency: 'USD',
        accountNumberLastFour: `000${i}`,
        balance: ZERO,
        availableBalance: ZERO,
        dtsOpened: new Date(),
      })),
    );
    const batch = [
      message('debit', '10.00'),
      message('debit', '1.25', { SvcAccountId: others[0] }),
      message('credit', '2.50', { SvcAccountId: others[1] }),
      message('debit', '0.75', { SvcAccountId: others[0] }),
    ];
    const before = await balances();
    const answers = await Promise.all([record(batch), record(batch)]);
    expect(answers.reduce((sum, answer) => sum + answer.recorded, 0)).toBe(batch.length);
    expect((await balances()).balance - before.balance).toBe(-1000);
    const balanceOf = async (id: string) => (await accounts().findOne({ _id: id }))!.balance;
    expect(await balanceOf(others[0]!)).toBe(-200);
    expect(await balanceOf(others[1]!)).toBe(250);
    expect(await postedFlags(batch)).toEqual(batch.map(() => true));
  });

  it('posts, once, a message whose record a crash left inserted and not posted', async () => {
    const crashed = message('debit', '42.42');
    await transactions().insertOne(unposted(crashed));
    const before = await balances();
    expect(await record([crashed])).toEqual({ recorded: 1, alreadyRecorded: 0 });
    expect((await balances()).balance - before.balance).toBe(-4242);
    expect(await postedFlags([crashed])).toEqual([true]);
    expect(await record([crashed])).toEqual({ recorded: 0, alreadyRecorded: 1 });
    expect((await balances()).balance - before.balance).toBe(-4242);
  });

  it('does not move the balance twice for a message a crash left between its balance move and its marking', async () => {
    // Sent again alone.
    const crashed = message('debit', '9.99');
    await crashAfterCompareAndSet(crashed);
    const before = await balances();
    expect(await record([crashed])).toEqual({ recorded: 0, alreadyRecorded: 1 });
    expect(await balances()).toEqual(before);
    expect(await postedFlags([crashed])).toEqual([true]);

    // Sent again with a new message of the same account.
    const again = message('credit', '20.20');
    await crashAfterCompareAndSet(again);
    const fresh = message('debit', '1.01');
    const beforeBoth = await balances();
    expect(await record([again, fresh])).toEqual({ recorded: 1, alreadyRecorded: 1 });
    expect((await balances()).balance - beforeBoth.balance).toBe(-101);
    expect(await postedFlags([again, fresh])).toEqual([true, true]);
    expect((await accounts().findOne({ _id: DEMO.accountId }))!.lastPostings).toEqual([idOf(fresh)]);

    // Not sent again: a later posting of any message of the account marks it.
    const forgotten = message('debit', '3.33');
    await crashAfterCompareAndSet(forgotten);
    const other = message('debit', '0.50');
    const beforeOther = await balances();
    expect(await record([other])).toEqual({ recorded: 1, alreadyRecorded: 0 });
    expect((await balances()).balance - beforeOther.balance).toBe(-50);
    expect(await postedFlags([forgotten])).toEqual([true]);
  });

  it('refuses a batch with one bad message as VALIDATION_FAILED naming its field, and changes nothing', async () => {
    const good = message('debit', '1.00');
    const cases: Array<{ bad: CardTransactionInput; field: string }> = [
      { bad: message('debit', '1.00', { SvcAccountId: 'no_such_account' }), field: 'input[1].SvcAccountId' },
      { bad: message('debit', '1.00', { SvcUserId: DEMO.friendUserId }), field: 'input[1].SvcAccountId' },
      { bad: message('debit', '1.00', { currency: 'EUR' }), field: 'input[1].currency' },
      { bad: message('debit', '1.234'), field: 'input[1].amount' },
      { bad: message('credit', '0'), field: 'input[1].amount' },
    ];
    const before = await balances();
    for (const { bad, field } of cases) {
      const response = await send([good, bad]);
      expect(response.body.errors?.[0]?.extensions).toMatchObject({ code: 'VALIDATION_FAILED', field });
      expect(response.body.data ?? null).toBeNull();
    }
    const tooMany = await send(Array.from({ length: 501 }, () => message('debit', '0.01')));
    expect(tooMany.body.errors?.[0]?.extensions).toMatchObject({ code: 'VALIDATION_FAILED', field: 'input' });
    expect(await balances()).toEqual(before);
    expect(await transactions().countDocuments({ _id: idOf(good) })).toBe(0);
    expect(await record([])).toEqual({ recorded: 0, alreadyRecorded: 0 });
  });

  it('takes a full batch of 500', async () => {
    const batch = Array.from({ length: 500 }, (_, i) =>
      message(i % 2 === 0 ? 'debit' : 'credit', `0.${String((i % 99) + 1).padStart(2, '0')}`),
    );
    const before = await balances();
    expect(await record(batch)).toEqual({ recorded: 500, alreadyRecorded: 0 });
    expect((await balances()).balance - before.balance).toBe(total(batch));
  });

  it('is for the cards subgraph only', async () => {
    const response = await send([message('debit', '1.00')], PROCESSOR_KEY);
    expect(response.body.errors?.[0]?.extensions?.code).toBe('FORBIDDEN');
    const anonymous = await stack.graphql(RECORD_MANY, { input: [message('debit', '1.00')] });
    expect(anonymous.body.errors?.[0]?.extensions?.code).toMatch(/UNAUTHENTICATED|FORBIDDEN/);
  });

  it('records through recordCardTransaction on the same posting: once, answering the stored record, and a batch sees it as recorded', async () => {
    const single = message('debit', '15.00');
    const before = await balances();
    const call = () =>
      stack.graphql<{ recordCardTransaction: { transactionId: string; amount: string } }>(
        RECORD_ONE,
        { input: single },
        { 'x-service-key': CARDS_KEY },
      );
    const [first, second] = await Promise.all([call(), call()]);
    for (const answer of [first, second])
      expect(answer.body.data?.recordCardTransaction).toEqual({ transactionId: idOf(single), amount: '-15.00' });
    expect((await balances()).balance - before.balance).toBe(-1500);
    expect(await record([single])).toEqual({ recorded: 0, alreadyRecorded: 1 });
    expect(await postedFlags([single])).toEqual([true]);
    const missing = await stack.graphql(
      RECORD_ONE,
      { input: message('debit', '1.00', { SvcAccountId: 'no_such_account' }) },
      { 'x-service-key': CARDS_KEY },
    );
    expect(missing.body.errors?.[0]?.extensions).toMatchObject({ code: 'NOT_FOUND', field: 'SvcAccountId' });
  });

  it('keeps a balance move and its record together for a stored record of another writer (no posted member: posted)', async () => {
    const legacy = message('debit', '2.00');
    const { posted: _posted, ...asBefore } = unposted(legacy);
    await transactions().insertOne(asBefore);
    const before = await balances();
    expect(await record([legacy])).toEqual({ recorded: 0, alreadyRecorded: 1 });
    expect(await balances()).toEqual(before);
  });
});
