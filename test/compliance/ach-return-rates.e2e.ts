import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { addDays } from '../../platform/contracts/dates.js';
import { DEMO } from '../../platform/domain/demo.js';
import type { OutboxEvent } from '../../platform/messaging/outbox.js';
import { signPrincipal } from '../../platform/security/signed-headers.js';
import { startTestStack, type TestStack } from '../support/harness.js';

interface ReturnRates {
  svcAggregatorId: string;
  minDate: string;
  maxDate: string;
  unAuthorizedReturns: number;
  unAuthorizedDaysOver: number;
  totalReturns: number;
  fedDR: number;
  updatedAt: string;
}
interface Envelope<T> {
  code: string;
  data: T;
  requestId: string;
  field?: string;
}
type RatesList = {
  total: { skipRecords: number; numberOfRecords: number; more: boolean };
  items: Array<{ notes: string[]; returnRates: ReturnRates }>;
};

const SERVICE_KEY = 'ach-operator-key-0123456789abcdefghij';
const today = new Date().toISOString().slice(0, 10);

describe('ACH return rates', () => {
  let stack: TestStack;
  let svcToken: string;
  const rates = (body: Record<string, unknown>, token = svcToken) =>
    stack.rest<Envelope<RatesList>>('POST', '/transfer-to/ach/return-rates', { headers: { 'x-svc-token': token }, body });
  const service = <T>(query: string, variables: Record<string, unknown>) =>
    stack.graphql<T>(query, variables, { 'x-service-key': SERVICE_KEY });

  beforeAll(async () => {
    stack = await startTestStack({ SERVICE_KEYS: `ach-processor=${SERVICE_KEY}` });
    svcToken = (
      await stack.rest<Envelope<{ token: string }>>('POST', '/auth/get-token', {
        body: { user: { login: DEMO.aggregatorLogin, password: DEMO.aggregatorPassword } },
      })
    ).body.data.token;
  });
  afterAll(async () => {
    await stack.stop();
  });

  it('lists the reports computed at start, latest maxDate first, with the out-of-compliance stretch of the demo history', async () => {
    const response = await rates({});
    expect(response.status).toBe(200);
    expect(response.body.code).toBe('0');
    const { items, total } = response.body.data;
    // The demo history covers the 90 days before today; a report exists for each day after its first.
    expect(items).toHaveLength(90);
    expect(total).toEqual({ skipRecords: 0, numberOfRecords: 90, more: false });
    expect(items[0]?.returnRates).toMatchObject({
      svcAggregatorId: DEMO.aggregatorId,
      maxDate: addDays(today, -1),
      minDate: addDays(today, -60),
    });
    const maxDates = items.map((item) => item.returnRates.maxDate);
    expect(maxDates).toEqual([...maxDates].sort().reverse());
    const out = items.filter((item) => item.returnRates.unAuthorizedDaysOver > 0);
    expect(out.length).toBeGreaterThan(0);
    expect(out.some((item) => item.notes.some((note) => note.startsWith('Unauthorized return rate')))).toBe(true);
  });

  it('answers one reporting date, or no items for a date without a report, and pages as documented', async () => {
    const one = await rates({ date: today });
    expect(one.body.data.items).toHaveLength(1);
    expect(one.body.data.items[0]?.returnRates.maxDate).toBe(addDays(today, -1));
    const none = await rates({ date: '2020-01-01' });
    expect(none.status).toBe(200);
    expect(none.body.data.items).toEqual([]);
    const page = await rates({ numberOfRecords: 10, skipRecords: 85 });
    expect(page.body.data.total).toEqual({ skipRecords: 85, numberOfRecords: 5, more: false });
    const first = await rates({ numberOfRecords: 10 });
    expect(first.body.data.total.more).toBe(true);
  });

  it.each([
    [{ numberOfRecords: 0 }, 'numberOfRecords'],
    [{ skipRecords: -1 }, 'skipRecords'],
    [{ date: '2026-13-01' }, 'date'],
  ])('refuses %o naming the field', async (body, field) => {
    const response = await rates(body);
    expect(response.status).toBe(400);
    expect(response.body.field).toBe(field);
  });

  it('shows an aggregator only its own reports', async () => {
    await stack.mongo
      .db('compliance')
      .collection<{ _id: string; svcAggregatorId: string; reportDate: string; maxDate: string }>('achReturnRateReports')
      .insertOne({ _id: 'other:2026-01-01', svcAggregatorId: 'other_aggregator', reportDate: today, maxDate: '2099-01-01' });
    const response = await rates({ date: today });
    expect(response.body.data.items.map((i) => i.returnRates.svcAggregatorId)).toEqual([DEMO.aggregatorId]);
  });

  it('recomputes the stored reports when a late return arrives through the payments subgraph, counting it once', async () => {
    const entryDate = addDays(today, -10);
    const before = (await rates({ date: today })).body.data.items[0]!.returnRates;
    const olderBefore = (await rates({ date: entryDate })).body.data.items[0]!.returnRates;
    const debit = await service<{ recordAchDebit: { status: string } }>(
      'mutation ($input: AchDebitInput!) { recordAchDebit(input: $input) { status } }',
      {
        input: { svcTransactionId: 'late_return_debit', svcAggregatorId: DEMO.aggregatorId, amount: 125.5, effectiveEntryDate: entryDate },
      },
    );
    expect(debit.body.data?.recordAchDebit.status).toBe('Processing');
    const returned = await service<{ recordAchReturn: { status: string; returnCode: string } }>(
      'mutation ($input: AchReturnInput!) { recordAchReturn(input: $input) { status returnCode } }',
      { input: { svcTransactionId: 'late_return_debit', returnCode: 'R10' } },
    );
    expect(returned.body.data?.recordAchReturn).toEqual({ status: 'Returned', returnCode: 'R10' });
    const twice = await service('mutation ($input: AchReturnInput!) { recordAchReturn(input: $input) { status } }', {
      input: { svcTransactionId: 'late_return_debit', returnCode: 'R10' },
    });
    expect(twice.body.errors?.[0]?.extensions?.code).toBe('CONFLICT');

    let after = before;
    for (let i = 0; i < 50 && after.unAuthorizedReturns === before.unAuthorizedReturns; i += 1) {
      await new Promise((resolve) => setTimeout(resolve, 100));
      after = (await rates({ date: today })).body.data.items[0]!.returnRates;
    }
    expect(after.unAuthorizedReturns).toBe(before.unAuthorizedReturns + 1);
    expect(after.fedDR).toBe(before.fedDR + 1);
    // The report of the entry date itself covers the 60 days before it, so it does not change.
    const olderAfter = (await rates({ date: entryDate })).body.data.items[0]!.returnRates;
    expect({ ...olderAfter, updatedAt: '' }).toEqual({ ...olderBefore, updatedAt: '' });

    // Forwarding the same events again (as a restarted forwarder might) changes nothing.
    const events = (await stack.mongo
      .db('payments')
      .collection<OutboxEvent>('outbox')
      .find({ type: { $in: ['ach.debit', 'ach.return'] } })
      .toArray()) as Array<OutboxEvent<'ach.debit' | 'ach.return'>>;
    const asPayments = {
      'x-internal-principal': signPrincipal({ kind: 'service', service: 'payments' }, stack.config.internalSecret, Date.now(), 'gateway'),
    };
    const replay = await stack.graphql<{ applyAchActivity: { applied: number } }>(
      'mutation ($a: [AchActivityInput!]!) { applyAchActivity(activities: $a) { applied } }',
      {
        a: events.map((event) => ({
          eventId: event._id,
          kind: event.type === 'ach.debit' ? 'debit' : 'return',
          svcAggregatorId: DEMO.aggregatorId,
          svcTransactionId: event.payload.svcTransactionId,
          entryDate: event.payload.entryDate,
          amount: event.payload.amount,
          returnCode: event.type === 'ach.return' ? event.payload.returnCode : null,
        })),
      },
      asPayments,
    );
    expect(replay.body.data?.applyAchActivity.applied).toBe(0);
  });

  it('takes ACH activity only from the services that own it', async () => {
    const asAggregator = await stack.graphql(
      'mutation { recordAchReturn(input: {svcTransactionId: "x", returnCode: "R01"}) { status } }',
      {},
      { 'x-svc-token': svcToken },
    );
    expect(asAggregator.body.errors?.[0]?.extensions?.code).toBe('FORBIDDEN');
    const activity = {
      eventId: 'forged',
      kind: 'debit',
      svcAggregatorId: DEMO.aggregatorId,
      svcTransactionId: 'forged',
      entryDate: today,
      amount: 5000,
    };
    const apply = 'mutation ($a: [AchActivityInput!]!) { applyAchActivity(activities: $a) { applied } }';
    const asProcessor = await service(apply, { a: [activity] });
    expect(asProcessor.body.errors?.[0]?.extensions?.code).toBe('FORBIDDEN');
    const negative = await stack.graphql(
      apply,
      { a: [{ ...activity, amount: -5000 }] },
      {
        'x-internal-principal': signPrincipal({ kind: 'service', service: 'payments' }, stack.config.internalSecret, Date.now(), 'gateway'),
      },
    );
    expect(negative.body.errors?.[0]?.extensions).toMatchObject({ code: 'VALIDATION_FAILED', field: 'amount' });
  });

  it('picks up a late debit on its own: stored reports whose window holds its entry date are recomputed', async () => {
    const entryDate = addDays(today, -3);
    const before = (await rates({ date: today })).body.data.items[0]!.returnRates;
    await service('mutation ($input: AchDebitInput!) { recordAchDebit(input: $input) { status } }', {
      input: { svcTransactionId: 'late_debit_only', svcAggregatorId: DEMO.aggregatorId, amount: 10, effectiveEntryDate: entryDate },
    });
    let after = before;
    for (let i = 0; i < 50 && after.fedDR === before.fedDR; i += 1) {
      await new Promise((resolve) => setTimeout(resolve, 100));
      after = (await rates({ date: today })).body.data.items[0]!.returnRates;
    }
    expect(after.fedDR).toBe(before.fedDR + 1);
  });
});
