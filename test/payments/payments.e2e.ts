import assert from 'node:assert';
import { minor, ZERO } from '../../platform/money/money.js';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { DEMO } from '../../platform/domain/demo.js';
import { usersCollection } from '../../subgraphs/user/src/profile/datasource.js';
import { beneficiaryUndosCollection } from '../../subgraphs/payments/src/beneficiaries/datasource.js';
import { fundsTransactionsCollection } from '../../subgraphs/payments/src/funds/datasource.js';
import {
  accountMonth,
  transactionsCollection,
  type TransactionDocument,
} from '../../subgraphs/payments/src/accounts/transactions-datasource.js';
import { accountsCollection } from '../../subgraphs/payments/src/accounts/datasource.js';
import { startTestStack, type TestStack } from '../support/harness.js';

interface TransactionBody {
  transactionId: string;
  SvcAccountId: string;
  amount: number;
  dtsValue: string;
  labels: string[];
  details: { memos: string[] };
}
interface ErrorBody {
  success: false;
  error: { code: string; message: string; field?: string };
}
interface UndoBody {
  id: string;
  isActionable: boolean;
  dtsQueued: string;
  dtsExpiry: string;
}
interface BeneficiaryBody {
  SvcBeneficiaryId: string;
  name: string | null;
  routingNumber: string | null;
  accountNumber: string | null;
  destinationPAN: string | null;
  isFavourite: boolean;
  isDeleted: boolean;
  dtsModified: string;
  userId: string;
  SvcUserId: string;
}
interface ModificationBody {
  success: boolean;
  beneficiary: BeneficiaryBody;
  undo: UndoBody;
}
interface IouBody {
  success: boolean;
  payload: Array<{
    IOUAccountId: string;
    SvcUserId: string;
    otherSvcUserId: string;
    transactions: Array<{
      IOUTransactionId: string;
      amount: number;
      isPending: boolean;
      isActive: boolean;
      lenderSvcUserId: string;
      borrowerSvcUserId: string;
    }>;
  }>;
}
interface AggregatorBody<T> {
  code: string;
  data: T;
  requestId: string;
  message?: string;
  field?: string;
}

const DAY = 24 * 3600 * 1000;

describe('accounts, transactions, beneficiaries, IOUs and funds', () => {
  let stack: TestStack;
  let token: string;
  let friendToken: string;
  let aggregatorToken: string;

  const sessionFor = (SvcUserId: string) => stack.issueUserToken(SvcUserId);
  const transaction = (id: string, SvcAccountId: string, dtsValue: Date): TransactionDocument => ({
    _id: id,
    transactionId: id,
    SvcAccountId,
    SvcUserId: DEMO.userId,
    SvcCardId: null,
    transactionIdBO: null,
    debitTransactionId: id,
    creditTransactionId: null,
    sourceSvcAccountId: SvcAccountId,
    destinationSvcAccountId: null,
    amount: minor(-1000),
    debit: minor(1000),
    credit: ZERO,
    currency: 'USD',
    transactionState: 'confirmed',
    isPending: false,
    isComplete: true,
    isDeclined: false,
    txnType: 'tocard',
    typeName: 'Card payment',
    narrative: 'Shop',
    narrativeSource: null,
    narrativeDestination: 'Shop',
    reference: null,
    attachments: null,
    labels: [],
    details: { memos: [] },
    internal: null,
    dtsRecorded: dtsValue,
    dtsValue,
    dtsBooked: dtsValue,
    dtsCompleted: dtsValue,
    accountMonth: accountMonth(SvcAccountId, dtsValue),
  });

  beforeAll(async () => {
    stack = await startTestStack();
    token = await stack.loginDemo();
    friendToken = await sessionFor(DEMO.friendUserId);
    aggregatorToken = (
      await stack.rest<AggregatorBody<{ token: string }>>('POST', '/auth/get-token', {
        body: { user: { login: DEMO.aggregatorLogin, password: DEMO.aggregatorPassword } },
      })
    ).body.data.token;
  });
  afterAll(async () => {
    await stack.stop();
  });

  describe('GET /accounts/:SvcAccountId/transactions/latest', () => {
    it('answers a bare array of the last 30 transactions when the last 12 months hold more, newest first', async () => {
      const response = await stack.rest<TransactionBody[]>('GET', `/accounts/${DEMO.accountId}/transactions/latest`, {
        headers: { token },
      });
      expect(response.status).toBe(200);
      assert(Array.isArray(response.body));
      expect(response.body).toHaveLength(30);
      const times = response.body.map((t) => Date.parse(t.dtsValue));
      expect([...times].sort((a, b) => b - a)).toEqual(times);
      expect(response.body[0]).toMatchObject({ SvcAccountId: DEMO.accountId, details: { memos: [] } });
      expect(Object.keys(response.body[0]!)).toEqual(
        expect.arrayContaining(['transactionIdBO', 'debit', 'credit', 'isPending', 'isComplete', 'isDeclined', 'internal', 'dtsBooked']),
      );
    });

    it('answers only the last 12 months when they hold fewer than 30', async () => {
      await accountsCollection(stack.mongo.db('payments')).insertOne({
        _id: 'sparse_account',
        SvcAccountId: 'sparse_account',
        SvcUserId: DEMO.userId,
        type: 'savings',
        name: 'Savings',
        currency: 'USD',
        accountNumberLastFour: '1111',
        balance: ZERO,
        availableBalance: ZERO,
        dtsOpened: null,
      });
      const now = Date.now();
      const docs = [
        ...Array.from({ length: 5 }, (_, i) => transaction(`sparse_recent_${i}`, 'sparse_account', new Date(now - (i + 1) * 20 * DAY))),
        ...Array.from({ length: 10 }, (_, i) => transaction(`sparse_old_${i}`, 'sparse_account', new Date(now - (380 + i) * DAY))),
      ];
      await transactionsCollection(stack.mongo.db('payments')).insertMany(docs);
      const response = await stack.rest<TransactionBody[]>('GET', '/accounts/sparse_account/transactions/latest', { headers: { token } });
      expect(response.body.map((t) => t.transactionId)).toEqual([
        'sparse_recent_0',
        'sparse_recent_1',
        'sparse_recent_2',
        'sparse_recent_3',
        'sparse_recent_4',
      ]);
    });

    it("answers another user's account as if it did not exist", async () => {
      const response = await stack.rest<ErrorBody>('GET', `/accounts/${DEMO.accountId}/transactions/latest`, {
        headers: { token: friendToken },
      });
      expect(response.status).toBe(404);
      expect(response.body.error).toMatchObject({ code: 'NOT_FOUND', field: 'SvcAccountId' });
    });
  });

  describe('POST /account/:SvcAccountId/transaction/:transactionId', () => {
    it('changes the comment and labels through each of the four path spellings, and nothing else', async () => {
      const spellings = [
        'account/%a/transaction/%t',
        'accounts/%a/transaction/%t',
        'account/%a/transactions/%t',
        'accounts/%a/transactions/%t',
      ];
      for (const [i, spelling] of spellings.entries()) {
        const path = `/${spelling.replace('%a', DEMO.accountId).replace('%t', 'demo_txn_05')}`;
        const response = await stack.rest<{ success: boolean; transaction: TransactionBody }>('POST', path, {
          headers: { token },
          body: { changes: { comment: `note ${i}`, labels: ['groceries', 'shared', 'groceries'], amount: 1_000_000 }, amount: 5 },
        });
        expect(response.status).toBe(200);
        expect(response.body).toMatchObject({
          success: true,
          transaction: { transactionId: 'demo_txn_05', labels: ['groceries', 'shared'], details: { memos: [`note ${i}`] } },
        });
      }
      const stored = await transactionsCollection(stack.mongo.db('payments')).findOne({ _id: 'demo_txn_05' });
      expect(stored?.amount).toBeLessThan(0);
      expect(stored?.amount).not.toBe(1_000_000);
    });

    it('removes the comment with null and refuses bad labels, naming the field and changing nothing', async () => {
      const path = `/account/${DEMO.accountId}/transaction/demo_txn_06`;
      await stack.rest('POST', path, { headers: { token }, body: { changes: { comment: 'keep me', labels: ['one'] } } });
      const bad = await stack.rest<ErrorBody>('POST', path, {
        headers: { token },
        body: { changes: { comment: null, labels: ['ok', 'x'.repeat(51)] } },
      });
      expect(bad.status).toBe(400);
      expect(bad.body.error).toMatchObject({ code: 'VALIDATION_FAILED', field: 'changes.labels[1]' });
      const cleared = await stack.rest<{ transaction: TransactionBody }>('POST', path, {
        headers: { token },
        body: { changes: { comment: null } },
      });
      expect(cleared.body.transaction).toMatchObject({ details: { memos: [] }, labels: ['one'] });
      const notObject = await stack.rest<ErrorBody>('POST', path, { headers: { token }, body: { changes: 'comment' } });
      expect(notObject.status).toBe(400);
      expect(notObject.body.error.field).toBe('changes');
    });

    it("answers a transaction of another account, or another user's, as not found", async () => {
      expect(
        (
          await stack.rest('POST', '/account/sparse_account/transaction/demo_txn_05', {
            headers: { token },
            body: { changes: { comment: 'x' } },
          })
        ).status,
      ).toBe(404);
      expect(
        (
          await stack.rest('POST', `/account/${DEMO.accountId}/transaction/demo_txn_05`, {
            headers: { token: friendToken },
            body: { changes: { comment: 'x' } },
          })
        ).status,
      ).toBe(404);
    });
  });

  describe('GraphQL transactions connection', () => {
    it('pages with cursors and filters by label, state and amount', async () => {
      const query =
        'query ($first: Int, $after: String, $filter: TransactionFilter) { me { accounts { SvcAccountId transactions(first: $first, after: $after, filter: $filter) { edges { cursor node { transactionId amount labels transactionState } } pageInfo { hasNextPage endCursor } } } } }';
      type Page = {
        me: {
          accounts: Array<{
            SvcAccountId: string;
            transactions: {
              edges: Array<{ node: { transactionId: string; amount: number; labels: string[]; transactionState: string } }>;
              pageInfo: { hasNextPage: boolean; endCursor: string | null };
            };
          }>;
        };
      };
      const pageOf = async (variables: Record<string, unknown>) => {
        const response = await stack.graphql<Page>(query, variables, { token });
        expect(response.body.errors).toBeUndefined();
        return response.body.data!.me.accounts.find((a) => a.SvcAccountId === DEMO.accountId)!.transactions;
      };
      const first = await pageOf({ first: 15 });
      const second = await pageOf({ first: 15, after: first.pageInfo.endCursor });
      const third = await pageOf({ first: 15, after: second.pageInfo.endCursor });
      const ids = [...first.edges, ...second.edges, ...third.edges].map((e) => e.node.transactionId);
      expect(new Set(ids).size).toBe(40);
      expect(third.pageInfo.hasNextPage).toBe(false);
      const income = await pageOf({ first: 100, filter: { label: 'income' } });
      expect(income.edges.length).toBeGreaterThan(0);
      expect(income.edges.every((e) => e.node.labels.includes('income'))).toBe(true);
      const pending = await pageOf({ first: 100, filter: { transactionState: 'pending' } });
      expect(pending.edges.map((e) => e.node.transactionId)).toEqual(['demo_txn_01']);
      const large = await pageOf({ first: 100, filter: { minAmount: 1000 } });
      expect(large.edges.length).toBeGreaterThan(0);
      expect(large.edges.every((e) => Math.abs(e.node.amount) >= 1000)).toBe(true);
    });

    it('lists 1,000 transactions of an account with a fixed number of queries of the transactions collection', async () => {
      const docs = Array.from({ length: 1000 }, (_, i) =>
        transaction(`bulk_${String(i).padStart(4, '0')}`, 'bulk_account', new Date(Date.now() - i * 60_000)),
      );
      await accountsCollection(stack.mongo.db('payments')).insertOne({
        _id: 'bulk_account',
        SvcAccountId: 'bulk_account',
        SvcUserId: DEMO.userId,
        type: 'checking',
        name: 'Bulk',
        currency: 'USD',
        accountNumberLastFour: '2222',
        balance: ZERO,
        availableBalance: ZERO,
        dtsOpened: null,
      });
      for (let i = 0; i < docs.length; i += 50) await transactionsCollection(stack.mongo.db('payments')).insertMany(docs.slice(i, i + 50));
      stack.mongo.commands.reset();
      const response = await stack.graphql<{ me: { accounts: Array<{ SvcAccountId: string; transactions: { edges: unknown[] } }> } }>(
        '{ me { accounts { SvcAccountId transactions(first: 1000) { edges { node { transactionId amount } } } } } }',
        {},
        { token },
      );
      expect(response.body.errors).toBeUndefined();
      expect(response.body.data!.me.accounts.find((a) => a.SvcAccountId === 'bulk_account')!.transactions.edges).toHaveLength(1000);
      const payments = stack.mongo.commands.snapshot(stack.mongo.databaseName('payments'));
      // Per account's page (three accounts here), however many transactions they hold: a find per window of
      // months and one for what is older (newestTransactions), as none of them fills a page of 1,000.
      expect(payments['transactions.find']).toBe(3 * 5);
      expect(payments['transactions.getMore'] ?? 0).toBeLessThanOrEqual(3 * 5 * 10);
    });
  });

  describe('POST /beneficiary/:SvcBeneficiaryId', () => {
    const modify = (id: string, body: unknown, as = token) =>
      stack.rest<ModificationBody & ErrorBody>('POST', `/beneficiary/${id}`, { headers: { token: as }, body });
    const undo = (id: string, undoId: string) =>
      stack.rest<ModificationBody & ErrorBody>('POST', `/beneficiary/${id}/undo/${undoId}`, { headers: { token } });

    it('changes the sent properties, masks the account number, sets dtsModified and returns an actionable undo', async () => {
      const before = Date.now();
      const response = await modify('demo_beneficiary_1', {
        name: 'Landlord Ltd',
        routingNumber: '011000015',
        accountNumber: '000123456789',
        isFavourite: false,
        unknownProperty: 'ignored',
        SvcUserId: 'someone_else',
      });
      expect(response.status).toBe(200);
      expect(response.body).toMatchObject({
        success: true,
        beneficiary: {
          SvcBeneficiaryId: 'demo_beneficiary_1',
          name: 'Landlord Ltd',
          routingNumber: '011000015',
          accountNumber: '**** 6789',
          isFavourite: false,
          SvcUserId: DEMO.userId,
          userId: DEMO.userId,
        },
      });
      expect(Date.parse(response.body.beneficiary.dtsModified)).toBeGreaterThanOrEqual(before - 5);
      expect(response.body.undo.isActionable).toBe(true);
      expect(Date.parse(response.body.undo.dtsExpiry) - Date.parse(response.body.undo.dtsQueued)).toBe(300_000);
      expect(JSON.stringify(response.body)).not.toContain('000123456789');
      expect(
        JSON.stringify(
          await stack.mongo
            .db('payments')
            .collection('beneficiaries')
            .findOne({ _id: 'demo_beneficiary_1' as never }),
        ),
      ).not.toContain('123456789');
    });

    it('writes nothing for a body with no documented property, answering an undo that is not actionable', async () => {
      const before = await stack.mongo
        .db('payments')
        .collection('beneficiaries')
        .findOne({ _id: 'demo_beneficiary_1' as never });
      const response = await modify('demo_beneficiary_1', { notAProperty: true });
      expect(response.status).toBe(200);
      expect(response.body.undo.isActionable).toBe(false);
      const after = await stack.mongo
        .db('payments')
        .collection('beneficiaries')
        .findOne({ _id: 'demo_beneficiary_1' as never });
      expect(after?.dtsModified).toEqual(before?.dtsModified);
    });

    it('keeps an IBAN masked to its country and last four, and takes amounts in cents such as 19.99', async () => {
      const response = await modify('demo_beneficiary_2', { defaultAmount: 19.99, iban: 'DE89370400440532013000' });
      expect(response.status).toBe(200);
      // The REST body has no iban (the spec's list): it is ignored there, and set through GraphQL.
      expect(response.body.beneficiary).toMatchObject({ defaultAmount: 19.99 });
      const graph = await stack.graphql<{ modifyBeneficiary: { beneficiary: { iban: string }; undo: { id: string } } }>(
        'mutation ($input: BeneficiaryInput!) { modifyBeneficiary(SvcBeneficiaryId: "demo_beneficiary_2", input: $input) { beneficiary { iban } undo { id } } }',
        { input: { iban: 'DE89370400440532013000' } },
        { token },
      );
      expect(graph.body.data!.modifyBeneficiary.beneficiary.iban).toBe('DE** **** 3000');
      expect(
        JSON.stringify(
          await stack.mongo
            .db('payments')
            .collection('beneficiaries')
            .findOne({ _id: 'demo_beneficiary_2' as never }),
        ),
      ).not.toContain('0532013000');
      await stack.rest('POST', `/beneficiary/demo_beneficiary_2/undo/${graph.body.data!.modifyBeneficiary.undo.id}`, {
        headers: { token },
      });
      await stack.rest('POST', `/beneficiary/demo_beneficiary_2/undo/${response.body.undo.id}`, { headers: { token } });
    });

    it('refuses a routing number that is not exactly 9 digits, naming the field, and changes nothing', async () => {
      for (const routingNumber of ['01100001', '0110000150', '01100001X']) {
        const response = await modify('demo_beneficiary_2', { name: 'Changed', routingNumber });
        expect(response.status).toBe(400);
        expect(response.body.error).toMatchObject({ code: 'VALIDATION_FAILED', field: 'routingNumber' });
      }
      const stored = await stack.mongo
        .db('payments')
        .collection('beneficiaries')
        .findOne({ _id: 'demo_beneficiary_2' as never });
      expect(stored?.name).toBe('Sam Demo');
    });

    it('accepts null for every property, clearing nullable ones and leaving the flags a beneficiary always has', async () => {
      const response = await modify('demo_beneficiary_3', {
        bankName: null,
        isFavourite: null,
        isActive: null,
        expiryMM: null,
        destinationPAN: null,
      });
      expect(response.status).toBe(200);
      expect(response.body.beneficiary).toMatchObject({ destinationPAN: null, isFavourite: false });
      const restored = await undo('demo_beneficiary_3', response.body.undo.id);
      expect(restored.body.beneficiary.destinationPAN).toBe('**** 1881');
    });

    it('undoes a modification once, restoring the replaced values; the used undo is no longer actionable', async () => {
      const changed = await modify('demo_beneficiary_2', { name: 'Samantha', isFavourite: true });
      const undone = await undo('demo_beneficiary_2', changed.body.undo.id);
      expect(undone.status).toBe(200);
      expect(undone.body).toMatchObject({
        success: true,
        beneficiary: { name: 'Sam Demo', isFavourite: false },
        undo: { id: changed.body.undo.id, isActionable: false },
      });
      const again = await undo('demo_beneficiary_2', changed.body.undo.id);
      expect(again.status).toBe(409);
      expect(again.body.error.field).toBe('undoId');
    });

    it('refuses to undo a change that a later change overtook, and an expired undo', async () => {
      const first = await modify('demo_beneficiary_2', { name: 'First' });
      const second = await modify('demo_beneficiary_2', { name: 'Second' });
      expect((await undo('demo_beneficiary_2', first.body.undo.id)).status).toBe(409);
      expect((await undo('demo_beneficiary_2', second.body.undo.id)).body.beneficiary.name).toBe('First');
      expect((await undo('demo_beneficiary_2', first.body.undo.id)).body.beneficiary.name).toBe('Sam Demo');

      const third = await modify('demo_beneficiary_2', { name: 'Third' });
      await beneficiaryUndosCollection(stack.mongo.db('payments')).updateOne(
        { _id: third.body.undo.id },
        { $set: { dtsExpiry: new Date(Date.now() - 1000) } },
      );
      const expired = await undo('demo_beneficiary_2', third.body.undo.id);
      expect(expired.status).toBe(409);
      expect(expired.body.error.message).toMatch(/expired/);
    });

    it("answers another user's beneficiary, and its undo, as if they did not exist", async () => {
      const mine = await modify('demo_beneficiary_1', { status: 'checked' });
      expect((await modify('demo_beneficiary_1', { name: 'Stolen' }, friendToken)).status).toBe(404);
      const theirs = await stack.rest('POST', `/beneficiary/demo_beneficiary_1/undo/${mine.body.undo.id}`, {
        headers: { token: friendToken },
      });
      expect(theirs.status).toBe(404);
    });

    it('lets two racing modifications each record the values they replaced', async () => {
      const [a, b] = await Promise.all([
        modify('demo_beneficiary_1', { bankName: 'Bank A' }),
        modify('demo_beneficiary_1', { bankName: 'Bank B' }),
      ]);
      expect([a.status, b.status]).toEqual([200, 200]);
      const undos = await beneficiaryUndosCollection(stack.mongo.db('payments'))
        .find({ _id: { $in: [a.body.undo.id, b.body.undo.id] } })
        .toArray();
      const previous = undos.map((u) => u.previous.bankName).sort();
      // One replaced the stored bank name, the other replaced the first one's.
      expect(previous).toContain('First Example Bank');
      expect(previous.some((p) => p === 'Bank A' || p === 'Bank B')).toBe(true);
    });

    it('creates and deletes beneficiaries in GraphQL; a deletion is undone like a modification', async () => {
      const created = await stack.graphql<{ createBeneficiary: { SvcBeneficiaryId: string; accountNumber: string } }>(
        'mutation ($input: BeneficiaryInput!) { createBeneficiary(input: $input) { SvcBeneficiaryId accountNumber } }',
        { input: { name: 'Plumber', accountNumber: '99887766', routingNumber: '021000021' } },
        { token },
      );
      const id = created.body.data!.createBeneficiary.SvcBeneficiaryId;
      expect(created.body.data!.createBeneficiary.accountNumber).toBe('**** 7766');
      const deleted = await stack.graphql<{ deleteBeneficiary: { beneficiary: { isDeleted: boolean }; undo: { id: string } } }>(
        'mutation ($id: ID!) { deleteBeneficiary(SvcBeneficiaryId: $id) { beneficiary { isDeleted } undo { id } } }',
        { id },
        { token },
      );
      expect(deleted.body.data!.deleteBeneficiary.beneficiary.isDeleted).toBe(true);
      const list = async () =>
        (
          await stack.graphql<{ me: { beneficiaries: Array<{ SvcBeneficiaryId: string }> } }>(
            '{ me { beneficiaries { SvcBeneficiaryId } } }',
            {},
            { token },
          )
        ).body.data!.me.beneficiaries.map((b) => b.SvcBeneficiaryId);
      expect(await list()).not.toContain(id);
      await undo(id, deleted.body.data!.deleteBeneficiary.undo.id);
      expect(await list()).toContain(id);
      const nameless = await stack.graphql('mutation { createBeneficiary(input: { bankName: "x" }) { SvcBeneficiaryId } }', {}, { token });
      expect(nameless.body.errors?.[0]?.extensions).toMatchObject({ code: 'REQUIRED_ELEMENT_MISSING', field: 'name' });
    });

    it("keeps a default amount's value when only the currency changes, and refuses a currency that cannot hold it, changing nothing", async () => {
      type Saved = { SvcBeneficiaryId: string; defaultAmount: string | null; defaultCurrency: string | null };
      const selection = 'SvcBeneficiaryId defaultAmount defaultCurrency';
      const create = async (input: Record<string, unknown>) =>
        (
          await stack.graphql<{ createBeneficiary: Saved }>(
            `mutation ($input: BeneficiaryInput!) { createBeneficiary(input: $input) { ${selection} } }`,
            { input: { name: 'Travel fund', ...input } },
            { token },
          )
        ).body.data!.createBeneficiary;
      const modify = (id: string, input: Record<string, unknown>) =>
        stack.graphql<{ modifyBeneficiary: { beneficiary: Saved } }>(
          `mutation ($id: ID!, $input: BeneficiaryInput!) { modifyBeneficiary(SvcBeneficiaryId: $id, input: $input) { beneficiary { ${selection} } } }`,
          { id, input },
          { token },
        );
      const stored = (id: string) =>
        stack.mongo
          .db('payments')
          .collection('beneficiaries')
          .findOne({ _id: id as never });

      // Without a currency the amount is in USD; 1450.00 USD becomes 1450 JPY, not 145000.
      const whole = await create({ defaultAmount: '1450.00' });
      expect(whole).toMatchObject({ defaultAmount: '1450.00', defaultCurrency: null });
      expect((await modify(whole.SvcBeneficiaryId, { defaultCurrency: 'JPY' })).body.data?.modifyBeneficiary.beneficiary).toMatchObject({
        defaultAmount: '1450',
        defaultCurrency: 'JPY',
      });
      expect(await stored(whole.SvcBeneficiaryId)).toMatchObject({ defaultAmount: 1450, defaultCurrency: 'JPY' });

      // 12.34 USD has no value in yen: refused, naming the currency, and nothing changes.
      const cents = await create({ defaultAmount: '12.34', defaultCurrency: 'USD' });
      const before = await stored(cents.SvcBeneficiaryId);
      const refused = await modify(cents.SvcBeneficiaryId, { defaultCurrency: 'JPY' });
      expect(refused.body.errors?.[0]?.extensions).toMatchObject({ code: 'VALIDATION_FAILED', field: 'defaultCurrency' });
      expect(await stored(cents.SvcBeneficiaryId)).toEqual(before);
      // With a new amount the change goes through.
      expect(
        (await modify(cents.SvcBeneficiaryId, { defaultCurrency: 'JPY', defaultAmount: '1234' })).body.data?.modifyBeneficiary.beneficiary,
      ).toMatchObject({ defaultAmount: '1234', defaultCurrency: 'JPY' });
    });
  });

  describe('IOUs', () => {
    it('answers the IOU the current user owes the creditor, amounts negative from the debtor side', async () => {
      const response = await stack.rest<IouBody>('GET', `/ious/for/${DEMO.friendUserId}`, { headers: { token } });
      expect(response.status).toBe(200);
      expect(response.body.success).toBe(true);
      expect(response.body.payload).toHaveLength(1);
      const [account] = response.body.payload;
      expect(account).toMatchObject({ SvcUserId: DEMO.friendUserId, otherSvcUserId: DEMO.userId });
      expect(account!.transactions.map((t) => t.amount)).toEqual([-120, 20, -15]);
      // The creditor owes the demo user nothing: the other way round there is no IOU.
      expect((await stack.rest<IouBody>('GET', `/ious/for/${DEMO.userId}`, { headers: { token: friendToken } })).body.payload).toEqual([]);
    });

    it('records an IOU transaction pending until the other party accepts it; only they can accept, only the recorder cancel', async () => {
      const record = await stack.graphql<{ recordIouTransaction: { IOUTransactionId: string; amount: string; isPending: boolean } }>(
        'mutation ($input: IouTransactionInput!) { recordIouTransaction(input: $input) { IOUTransactionId amount isPending } }',
        { input: { otherSvcUserId: DEMO.friendUserId, kind: 'repayment', amount: 50, currency: 'USD', narrative: 'Paying back' } },
        { token },
      );
      expect(record.body.errors).toBeUndefined();
      const id = record.body.data!.recordIouTransaction.IOUTransactionId;
      expect(record.body.data!.recordIouTransaction).toMatchObject({ amount: '50.00', isPending: true });
      const accept = (as: string) =>
        stack.graphql<{ acceptIouTransaction: { isPending: boolean; amount: string } }>(
          'mutation ($id: ID!) { acceptIouTransaction(IOUTransactionId: $id) { isPending amount } }',
          { id },
          { token: as },
        );
      expect((await accept(token)).body.errors?.[0]?.extensions?.code).toBe('FORBIDDEN');
      const accepted = await accept(friendToken);
      // The lender reads a repayment to them as negative: the borrower owes less.
      expect(accepted.body.data!.acceptIouTransaction).toEqual({ isPending: false, amount: '-50.00' });
      expect((await accept(friendToken)).body.errors?.[0]?.extensions?.code).toBe('CONFLICT');
      const cancel = await stack.graphql(
        'mutation ($id: ID!) { cancelIouTransaction(IOUTransactionId: $id) { isActive } }',
        { id },
        { token },
      );
      expect(cancel.body.errors?.[0]?.extensions?.code).toBe('CONFLICT');
    });

    it('refuses an IOU with an unknown user, with oneself, or with a bad amount, naming the field', async () => {
      const attempt = async (input: Record<string, unknown>) =>
        (
          await stack.graphql(
            'mutation ($input: IouTransactionInput!) { recordIouTransaction(input: $input) { IOUTransactionId } }',
            { input },
            { token },
          )
        ).body.errors?.[0]?.extensions;
      expect(await attempt({ otherSvcUserId: 'nobody_here', kind: 'loan', amount: 5, currency: 'USD' })).toMatchObject({
        code: 'NOT_FOUND',
        field: 'otherSvcUserId',
      });
      expect(await attempt({ otherSvcUserId: DEMO.userId, kind: 'loan', amount: 5, currency: 'USD' })).toMatchObject({
        code: 'VALIDATION_FAILED',
        field: 'otherSvcUserId',
      });
      expect(await attempt({ otherSvcUserId: DEMO.friendUserId, kind: 'loan', amount: 0.001, currency: 'USD' })).toMatchObject({
        code: 'VALIDATION_FAILED',
        field: 'amount',
      });
      // A kind that is none is refused while the variables are read, naming its path.
      const gift = await stack.graphql(
        'mutation ($input: IouTransactionInput!) { recordIouTransaction(input: $input) { IOUTransactionId } }',
        { input: { otherSvcUserId: DEMO.friendUserId, kind: 'gift', amount: 5, currency: 'USD' } },
        { token },
      );
      expect(gift.body.errors?.[0]).toMatchObject({
        extensions: { code: 'BAD_USER_INPUT' },
        message: expect.stringContaining('"input.kind"') as string,
      });
    });

    it("shows a user's IOUs, as lender and as borrower, only to that user", async () => {
      const mine = await stack.graphql<{ me: { ious: Array<{ IOUAccountId: string; balance: string }> } }>(
        '{ me { ious { IOUAccountId balance } } }',
        {},
        { token },
      );
      expect(mine.body.data!.me.ious.length).toBeGreaterThan(0);
      // Accepted: a 120 loan, then 20 and 50 repaid: the demo user owes 50.
      expect(mine.body.data!.me.ious[0]!.balance).toBe('-50.00');
      const users = usersCollection(stack.mongo.db('user'));
      const demo = await users.findOne({ _id: DEMO.userId });
      await users.insertOne({ ...demo!, _id: 'iou_stranger', SvcUserId: 'iou_stranger' });
      const stranger = await sessionFor('iou_stranger');
      expect(
        (await stack.graphql<{ me: { ious: unknown[] } }>('{ me { ious { IOUAccountId } } }', {}, { token: stranger })).body.data!.me.ious,
      ).toEqual([]);
      expect((await stack.rest<IouBody>('GET', `/ious/for/${DEMO.friendUserId}`, { headers: { token: stranger } })).body.payload).toEqual(
        [],
      );
      // The creditor sees the same account from its side, with the signs turned.
      const friend = await stack.graphql<{ me: { ious: Array<{ IOUAccountId: string; balance: string }> } }>(
        '{ me { ious { IOUAccountId balance } } }',
        {},
        { token: friendToken },
      );
      expect(friend.body.data!.me.ious.find((a) => a.IOUAccountId === mine.body.data!.me.ious[0]!.IOUAccountId)?.balance).toBe('50.00');
    });
  });

  describe('POST /ibis/financial/retrieve', () => {
    const retrieve = (body: unknown) =>
      stack.rest<AggregatorBody<Array<Record<string, unknown>>>>('POST', '/ibis/financial/retrieve', {
        headers: { 'x-svc-token': aggregatorToken },
        body,
      });

    it('retrieves a funds transaction by each one of its three ids', async () => {
      for (const body of [{ svcFundsId: 'demo_funds_2' }, { reference: 'FUNDREF1001' }, { arn: '74611000007919' }]) {
        const response = await retrieve(body);
        expect(response.status).toBe(200);
        expect(response.body.code).toBe('0');
        expect(response.body.data).toHaveLength(1);
        expect(response.body.data[0]).toMatchObject({
          svcFundsId: 'demo_funds_2',
          svcAggregatorId: DEMO.aggregatorId,
          type: 'credit',
          svcStatus: 'Complete',
          reference: 'FUNDREF1001',
        });
        expect(Object.keys(response.body.data[0]!).sort()).toEqual([
          'arn',
          'balance',
          'boTransId',
          'dtsCreatedAt',
          'fee',
          'lastDepositAmount',
          'ledgerBalance',
          'reference',
          'svcAggregatorId',
          'svcCardId',
          'svcFundsId',
          'svcStatus',
          'type',
        ]);
      }
    });

    it('rejects more than one id, or none, with 400 naming them', async () => {
      const two = await retrieve({ svcFundsId: 'demo_funds_2', reference: 'FUNDREF1001' });
      expect(two.status).toBe(400);
      expect(two.body).toMatchObject({ code: 'validation_failed', field: 'svcFundsId,reference' });
      const three = await retrieve({ svcFundsId: 'demo_funds_2', reference: 'FUNDREF1001', arn: 'x' });
      expect(three.body.field).toBe('svcFundsId,reference,arn');
      expect((await retrieve({})).status).toBe(400);
    });

    it('checks each id against its pattern and length', async () => {
      expect((await retrieve({ svcFundsId: 'has-dash' })).body.field).toBe('svcFundsId');
      expect((await retrieve({ reference: 'R'.repeat(33) })).body.field).toBe('reference');
      expect((await retrieve({ reference: 'with_underscore' })).body.field).toBe('reference');
      expect((await retrieve({ arn: '<script>' })).body.field).toBe('arn');
      expect((await retrieve({ arn: '   ' })).body.field).toBe('arn');
    });

    it("answers another aggregator's funds transaction as none", async () => {
      await fundsTransactionsCollection(stack.mongo.db('payments')).insertOne({
        _id: 'other_funds',
        svcFundsId: 'other_funds',
        svcAggregatorId: 'other_aggregator',
        reference: 'OTHERREF1',
        type: 'debit',
        svcCardId: null,
        svcStatus: 'Complete',
        boTransId: null,
        arn: null,
        fee: ZERO,
        balance: ZERO,
        lastDepositAmount: ZERO,
        ledgerBalance: ZERO,
        dtsCreatedAt: new Date(),
      });
      const response = await retrieve({ reference: 'OTHERREF1' });
      expect(response.status).toBe(200);
      expect(response.body.data).toEqual([]);
    });
  });
});
