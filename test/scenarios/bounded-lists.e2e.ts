import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { DEMO } from '../../platform/domain/demo.js';
import { signPrincipal } from '../../platform/security/signed-headers.js';
import { usersCollection } from '../../subgraphs/user/src/profile/datasource.js';
import { USER_LIST_CAPS, MAX_ADDRESSES } from '../../subgraphs/user/src/list-caps.js';
import { PAYMENTS_LIST_CAPS } from '../../subgraphs/payments/src/list-caps.js';
import { CARDS_LIST_CAPS } from '../../subgraphs/cards/src/list-caps.js';
import { COMPLIANCE_LIST_CAPS } from '../../subgraphs/compliance/src/list-caps.js';
import { startWebhookReceiver } from '../../scripts/lib/webhook-receiver.js';
import { startTestStack, type TestStack } from '../support/harness.js';

interface EndUserError {
  success: false;
  error: { code: string; message: string; field?: string };
}
/** The aggregator API's envelope; its error codes are the graph's in lower case. */
interface Envelope<T> {
  code: string;
  data: T;
  message?: string;
  field?: string;
}

const address = (i: number) => ({ addressLine1: `${i} Main St`, city: 'Springfield', state: 'IL', postalCode: '62701', country: 'US' });
const addresses = (count: number, from = 0) => Array.from({ length: count }, (_, i) => address(from + i));
const UPDATE_USER = 'mutation ($input: UserUpdateInput!) { updateUser(input: $input) { success } }';

describe('bounded lists: a list over its cap is refused with 400 naming the field, and changes nothing', () => {
  let stack: TestStack;
  let receiver: Awaited<ReturnType<typeof startWebhookReceiver>>;
  let userToken: string;
  let aggregatorToken: string;
  let merchantJwt: string;

  const storedAddresses = async () => (await usersCollection(stack.mongo.db('user')).findOne({ _id: DEMO.friendUserId }))!.addresses;
  const postUser = (body: Record<string, unknown>) => stack.rest<EndUserError>('POST', '/user', { headers: { token: userToken }, body });
  const asService = (service: 'payments') => ({
    'x-internal-principal': signPrincipal({ kind: 'service', service }, stack.config.internalSecret, Date.now(), 'gateway'),
  });

  beforeAll(async () => {
    receiver = await startWebhookReceiver(DEMO.webhook.secret);
    stack = await startTestStack();
    await stack.mongo
      .db('cards')
      .collection('webhookConfigs')
      .updateOne({ _id: DEMO.aggregatorId as never }, { $set: { url: receiver.url, timeoutMs: 500 } });
    userToken = await stack.issueUserToken(DEMO.friendUserId);
    aggregatorToken = (
      await stack.rest<Envelope<{ token: string }>>('POST', '/auth/get-token', {
        body: { user: { login: DEMO.aggregatorLogin, password: DEMO.aggregatorPassword } },
      })
    ).body.data.token;
    merchantJwt = (
      await stack.rest<Envelope<{ token: string }>>('POST', '/payment-link/merchant/get-token', {
        headers: { 'x-svc-token': aggregatorToken },
        body: { svcMerchantId: DEMO.merchantId },
      })
    ).body.data.token;
  });
  afterAll(async () => {
    await stack.stop();
    await receiver.close();
  });

  describe('POST /user addresses', () => {
    it('refuses more than the cap in one request, over REST and GraphQL, storing nothing', async () => {
      expect(MAX_ADDRESSES).toBe(10);
      const before = await storedAddresses();
      for (const field of ['newAddresses', 'addresses', 'deletedAddresses'] as const) {
        const refused = await postUser({ [field]: addresses(USER_LIST_CAPS[`UserUpdateInput.${field}`] + 1) });
        expect(refused.status, field).toBe(400);
        expect(refused.body.error, field).toMatchObject({ code: 'VALIDATION_FAILED', field });
        const graphql = await stack.graphql(UPDATE_USER, { input: { [field]: addresses(MAX_ADDRESSES + 1) } }, { token: userToken });
        expect(graphql.body.errors?.[0]?.extensions, field).toMatchObject({ code: 'VALIDATION_FAILED', field });
        expect(graphql.body.data?.updateUser ?? null).toBeNull();
      }
      expect(await storedAddresses()).toEqual(before);
    });

    it('takes the cap, then refuses every address past it however many requests bring them', async () => {
      const full = await postUser({ addresses: addresses(MAX_ADDRESSES) });
      expect(full.status).toBe(200);
      expect(await storedAddresses()).toHaveLength(MAX_ADDRESSES);
      const kept = await storedAddresses();

      // The issue's case: one address per request, over and over.
      for (let i = 0; i < 5; i += 1) {
        const more = await postUser({ newAddresses: [address(100 + i)] });
        expect(more.status).toBe(400);
        expect(more.body.error).toMatchObject({ code: 'VALIDATION_FAILED', field: 'newAddresses' });
      }
      const graphql = await stack.graphql(UPDATE_USER, { input: { newAddresses: [address(200)] } }, { token: userToken });
      expect(graphql.body.errors?.[0]?.extensions).toMatchObject({ code: 'VALIDATION_FAILED', field: 'newAddresses' });
      expect(await storedAddresses()).toEqual(kept);

      // Deleting one makes room for one.
      const swapped = await postUser({ deletedAddresses: [{ SvcUserAddressId: kept[0]!._id }], newAddresses: [address(300)] });
      expect(swapped.status).toBe(200);
      expect(await storedAddresses()).toHaveLength(MAX_ADDRESSES);
    });

    it('builds the total up one request at a time to the cap and no further', async () => {
      expect((await postUser({ addresses: [] })).status).toBe(200);
      let accepted = 0;
      for (let i = 0; i < MAX_ADDRESSES + 3; i += 1) {
        const response = await postUser({ newAddresses: [address(400 + i)] });
        if (response.status === 200) accepted += 1;
        else expect(response.body.error).toMatchObject({ code: 'VALIDATION_FAILED', field: 'newAddresses' });
      }
      expect(accepted).toBe(MAX_ADDRESSES);
      expect(await storedAddresses()).toHaveLength(MAX_ADDRESSES);
    });
  });

  it('caps the alerts a device syncs', async () => {
    const cap = USER_LIST_CAPS['Mutation.syncAlerts(alerts:)'];
    const alerts = (count: number) => Array.from({ length: count }, () => ({ alertTypeId: 'alert1', isEnabled: true }));
    const refused = await stack.rest<EndUserError>('POST', '/alerts', { headers: { token: userToken }, body: alerts(cap + 1) });
    expect(refused.status).toBe(400);
    expect(refused.body.error).toMatchObject({ code: 'VALIDATION_FAILED' });
    expect(refused.body.error.message).toContain(`at most ${cap} items`);
    const graphql = await stack.graphql(
      'mutation ($alerts: [AlertInput!]!) { syncAlerts(alerts: $alerts) { success } }',
      { alerts: alerts(cap + 1) },
      { token: userToken },
    );
    expect(graphql.body.errors?.[0]?.extensions).toMatchObject({ code: 'VALIDATION_FAILED', field: 'alerts' });
    expect(await stack.mongo.db('user').collection('alertSettings').countDocuments({ SvcUserId: DEMO.friendUserId })).toBe(0);
    const accepted = await stack.rest<{ success: boolean }>('POST', '/alerts', { headers: { token: userToken }, body: alerts(cap) });
    expect(accepted.status).toBe(200);
    expect(await stack.mongo.db('user').collection('alertSettings').countDocuments({ SvcUserId: DEMO.friendUserId, isEnabled: true })).toBe(
      1,
    );
  });

  it('caps the sandbox cases an aggregator runs at once', async () => {
    const cap = CARDS_LIST_CAPS['SandboxInput.sandBoxCases'];
    receiver.setMode({ reply: '00' });
    const before = receiver.received.length;
    const run = (count: number) =>
      stack.rest<Envelope<unknown[]>>('POST', '/ibis-sandbox/webhook/init', {
        headers: { 'x-svc-token': aggregatorToken },
        body: { svcCardId: DEMO.testCardId, sandBoxCases: Array.from({ length: count }, () => 't003_01') },
      });
    const refused = await run(cap + 1);
    expect(refused.status).toBe(400);
    expect(refused.body).toMatchObject({ code: 'validation_failed', field: 'sandBoxCases' });
    const graphql = await stack.graphql(
      'mutation ($input: SandboxInput!) { runWebhookSandbox(input: $input) { pass } }',
      { input: { svcCardId: DEMO.testCardId, sandBoxCases: Array.from({ length: cap + 1 }, () => 't003_01') } },
      { 'x-svc-token': aggregatorToken },
    );
    expect(graphql.body.errors?.[0]?.extensions).toMatchObject({ code: 'VALIDATION_FAILED', field: 'sandBoxCases' });
    expect(receiver.received.length).toBe(before);
    const accepted = await run(cap);
    expect(accepted.status).toBe(200);
    expect(accepted.body.data).toHaveLength(cap);
  });

  it('caps the documents linked to a KYC application in one request', async () => {
    const cap = COMPLIANCE_LIST_CAPS['ApplicationUpdateInput.documents'];
    const call = <T>(path: string, body: unknown) =>
      stack.rest<Envelope<T>>('POST', path, { headers: { 'x-svc-token': aggregatorToken }, body });
    const init = await call<{ applicationId: string }>('/akepa/customer/init', {
      customerId: 'cap_customer',
      type: 'individual',
      individual: { firstName: 'Cap', lastName: 'Customer' },
    });
    expect(init.status).toBe(200);
    const { applicationId } = init.body.data;
    const documents = (count: number) =>
      Array.from({ length: count }, (_, i) => ({ entityId: 'cap_customer', documentId: `doc_${i}`, view: 'front' }));
    const stored = () => stack.mongo.db('compliance').collection('applications').findOne({ applicationId });
    const before = await stored();
    const refused = await call('/akepa/update', { customerId: 'cap_customer', applicationId, documents: documents(cap + 1) });
    expect(refused.status).toBe(400);
    expect(refused.body).toMatchObject({ code: 'validation_failed', field: 'documents' });
    expect(await stored()).toEqual(before);
    // At the cap the list passes, and its first item is what is wrong (no such document).
    const atCap = await call('/akepa/update', { customerId: 'cap_customer', applicationId, documents: documents(cap) });
    expect(atCap.status).toBe(400);
    expect(atCap.body.field).toBe('documents[0].documentId');
  });

  it('caps the payment types and fields of a payment link', async () => {
    const create = (body: Record<string, unknown>) =>
      stack.rest<Envelope<{ svcTransactionId: string }>>('POST', '/public/merchant/payment/create', {
        headers: { 'x-svc-jwtoken': merchantJwt },
        body: { payerName: 'Cap Payer', amount: 10, currency: 'USD', ...body },
      });
    const links = () => stack.mongo.db('payments').collection('paymentLinks').countDocuments({ payerName: 'Cap Payer' });
    const typesCap = PAYMENTS_LIST_CAPS['PaymentLinkInput.availablePaymentType'];
    const fieldsCap = PAYMENTS_LIST_CAPS['PaymentLinkInput.fields'];
    const field = (i: number) => ({ index: i, code: 'firstName', label: 'First name', value: `Name ${i}` });
    const tooManyTypes = await create({ availablePaymentType: ['card', 'ach', 'card'].slice(0, typesCap + 1) });
    expect(tooManyTypes.status).toBe(400);
    expect(tooManyTypes.body).toMatchObject({ code: 'validation_failed', field: 'availablePaymentType' });
    const tooManyFields = await create({ fields: Array.from({ length: fieldsCap + 1 }, (_, i) => field(i)) });
    expect(tooManyFields.status).toBe(400);
    expect(tooManyFields.body).toMatchObject({ code: 'validation_failed', field: 'fields' });
    const graphql = await stack.graphql(
      'mutation ($input: PaymentLinkInput!) { createPaymentLink(input: $input) { svcTransactionId } }',
      { input: { payerName: 'Cap Payer', amount: '10', currency: 'USD', availablePaymentType: ['card', 'ach', 'card'] } },
      { 'x-svc-jwtoken': merchantJwt },
    );
    expect(graphql.body.errors?.[0]?.extensions).toMatchObject({ code: 'VALIDATION_FAILED', field: 'availablePaymentType' });
    expect(await links()).toBe(0);
    const accepted = await create({ availablePaymentType: ['card', 'ach'], fields: Array.from({ length: fieldsCap }, (_, i) => field(i)) });
    expect(accepted.status).toBe(200);
    expect(await links()).toBe(1);
  });

  it('caps the labels of a transaction and the ids of a refund filter', async () => {
    const token = await stack.issueUserToken(DEMO.userId);
    const cap = PAYMENTS_LIST_CAPS['TransactionChangesInput.labels'];
    const path = `/account/${DEMO.accountId}/transaction/demo_txn_07`;
    const labels = (count: number) => Array.from({ length: count }, () => 'same');
    const stored = () =>
      stack.mongo
        .db('payments')
        .collection('transactions')
        .findOne({ _id: 'demo_txn_07' as never });
    const before = await stored();
    const refused = await stack.rest<EndUserError>('POST', path, { headers: { token }, body: { changes: { labels: labels(cap + 1) } } });
    expect(refused.status).toBe(400);
    expect(refused.body.error).toMatchObject({ code: 'VALIDATION_FAILED', field: 'changes.labels' });
    expect((await stored())?.labels).toEqual(before?.labels);
    expect((await stack.rest('POST', path, { headers: { token }, body: { changes: { labels: labels(cap) } } })).status).toBe(200);
    expect((await stored())?.labels).toEqual(['same']);

    const idsCap = PAYMENTS_LIST_CAPS['RefundFilter.svcMerchantIds'];
    const ids = (count: number) => Array.from({ length: count }, (_, i) => `merchant_${i}`);
    const list = (svcMerchantIds: string[]) =>
      stack.rest<Envelope<unknown>>('POST', '/payment-link/payment/refund-list', {
        headers: { 'x-svc-token': aggregatorToken },
        body: { svcMerchantIds },
      });
    const tooMany = await list(ids(idsCap + 1));
    expect(tooMany.status).toBe(400);
    expect(tooMany.body).toMatchObject({ code: 'validation_failed', field: 'svcMerchantIds' });
    expect((await list(ids(idsCap))).status).toBe(200);
  });

  it('caps the batches the services forward (audit records, ACH activity)', async () => {
    const recordsCap = COMPLIANCE_LIST_CAPS['Mutation.appendAuditRecords(records:)'];
    const record = (i: number) => ({
      id: `evt_cap_${i}`,
      action: 'USER_BLOCKED',
      dts: new Date().toISOString(),
      actorKind: 'service',
      actorId: 'payments',
      subjectType: 'user',
      subjectId: 'cap_check_user',
      details: {},
    });
    const append = (count: number) =>
      stack.graphql(
        'mutation ($records: [AuditRecordInput!]!) { appendAuditRecords(records: $records) { appended } }',
        { records: Array.from({ length: count }, (_, i) => record(i)) },
        asService('payments'),
      );
    const audit = () => stack.mongo.db('compliance').collection('audit_log').countDocuments({ subjectId: 'cap_check_user' });
    const refused = await append(recordsCap + 1);
    expect(refused.body.errors?.[0]?.extensions).toMatchObject({ code: 'VALIDATION_FAILED', field: 'records' });
    expect(await audit()).toBe(0);
    expect((await append(recordsCap)).body.data).toEqual({ appendAuditRecords: { appended: recordsCap } });
    expect(await audit()).toBe(recordsCap);

    const activitiesCap = COMPLIANCE_LIST_CAPS['Mutation.applyAchActivity(activities:)'];
    const activity = (i: number) => ({
      eventId: `cap_ach_${i}`,
      kind: 'debit',
      svcAggregatorId: DEMO.aggregatorId,
      svcTransactionId: `cap_ach_${i}`,
      entryDate: new Date().toISOString().slice(0, 10),
      amount: 100,
    });
    const apply = (count: number) =>
      stack.graphql(
        'mutation ($a: [AchActivityInput!]!) { applyAchActivity(activities: $a) { applied } }',
        { a: Array.from({ length: count }, (_, i) => activity(i)) },
        asService('payments'),
      );
    const tooMany = await apply(activitiesCap + 1);
    expect(tooMany.body.errors?.[0]?.extensions).toMatchObject({ code: 'VALIDATION_FAILED', field: 'activities' });
    expect(tooMany.body.data ?? null).toBeNull();
    expect((await apply(activitiesCap)).body.data).toEqual({ applyAchActivity: { applied: activitiesCap } });
  });
});
