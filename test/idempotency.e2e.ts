import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { DEMO } from '../platform/demo.js';
import { beneficiaryUndosCollection } from '../subgraphs/payments/src/datasources/beneficiaries.js';
import { startTestStack, type TestStack } from './harness.js';

interface Modification {
  success?: boolean;
  beneficiary?: { name: string };
  undo?: { id: string };
  error?: { code: string; field?: string };
}

describe('Idempotency-Key on requests that change state', () => {
  let stack: TestStack;
  let token: string;

  beforeAll(async () => {
    stack = await startTestStack();
    token = await stack.loginDemo();
  });
  afterAll(() => stack?.stop());

  const undos = () => beneficiaryUndosCollection(stack.mongo.db('payments')).countDocuments({ SvcBeneficiaryId: 'demo_beneficiary_2' });
  const modify = (key: string, body: unknown) => stack.rest<Modification>('POST', '/beneficiary/demo_beneficiary_2', { headers: { token, 'idempotency-key': key }, body });

  it('runs a request once and answers a repeat with the kept answer', async () => {
    const before = await undos();
    const first = await modify('key-replay-1', { name: 'Sam D.' });
    const again = await modify('key-replay-1', { name: 'Sam D.' });
    expect(first.status).toBe(200);
    expect(first.headers.get('idempotent-replayed')).toBeNull();
    expect(again.status).toBe(200);
    expect(again.headers.get('idempotent-replayed')).toBe('true');
    // The same undo object: the modification did not run twice.
    expect(again.body.undo?.id).toBe(first.body.undo?.id);
    expect(await undos()).toBe(before + 1);
  });

  it('refuses the same key with another body (422) and changes nothing', async () => {
    await modify('key-reuse-1', { name: 'Sam E.' });
    const before = await undos();
    const reused = await modify('key-reuse-1', { name: 'Someone else' });
    expect(reused.status).toBe(422);
    expect(reused.body.error).toMatchObject({ code: 'IDEMPOTENCY_KEY_REUSED', field: 'idempotency-key' });
    expect(await undos()).toBe(before);
  });

  it('runs racing repeats once: the others get the kept answer or 409 while it runs', async () => {
    const before = await undos();
    const answers = await Promise.all(Array.from({ length: 6 }, () => modify('key-race-1', { name: 'Sam F.' })));
    expect(await undos()).toBe(before + 1);
    for (const answer of answers) expect([200, 409]).toContain(answer.status);
    const ids = new Set(answers.filter((a) => a.status === 200).map((a) => a.body.undo?.id));
    expect(ids.size).toBe(1);
  });

  it('keeps keys per caller, and ignores them on reads', async () => {
    // The aggregator's mutation with the same key string is its own request.
    const login = await stack.rest<{ data: { token: string } }>('POST', '/auth/get-token', { body: { user: { login: DEMO.aggregatorLogin, password: DEMO.aggregatorPassword } } });
    const merchant = await stack.rest<{ code: string }>('POST', '/payment-link/merchant/get-token', { headers: { 'x-svc-token': login.body.data.token, 'idempotency-key': 'key-replay-1' }, body: { svcMerchantId: DEMO.merchantId } });
    expect(merchant.status).toBe(200);
    const read = await stack.rest('GET', '/restrictions', { headers: { token, 'idempotency-key': 'key-replay-1' } });
    expect(read.status).toBe(200);
  });

  it('works for GraphQL mutations at the gateway', async () => {
    const mutation = 'mutation ($name: String) { modifyCard(SvcCardId: "demo_card_1", input: { name: $name }) { card { name } } }';
    const first = await stack.graphql(mutation, { name: 'Bills' }, { token, 'idempotency-key': 'key-graphql-1' });
    const again = await stack.graphql(mutation, { name: 'Bills' }, { token, 'idempotency-key': 'key-graphql-1' });
    expect(again.headers.get('idempotent-replayed')).toBe('true');
    expect(again.body).toEqual(first.body);
    const other = await stack.graphql(mutation, { name: 'Other' }, { token, 'idempotency-key': 'key-graphql-1' });
    expect(other.status).toBe(422);
    expect(other.body.errors?.[0]?.extensions?.code).toBe('IDEMPOTENCY_KEY_REUSED');
  });

  it('never keeps an answer that carries a credential: a login repeated with a key logs in again', async () => {
    const body = { channel: 'internet', userName: DEMO.userName, password: DEMO.password };
    const first = await stack.rest<{ token: string }>('PUT', '/token', { headers: { 'idempotency-key': 'key-login-1' }, body });
    const again = await stack.rest<{ token: string }>('PUT', '/token', { headers: { 'idempotency-key': 'key-login-1' }, body });
    expect(first.status).toBe(200);
    expect(again.status).toBe(200);
    expect(again.headers.get('idempotent-replayed')).toBeNull();
    expect(again.body.token).not.toBe(first.body.token);
  });
});
