import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { DEMO } from '../../platform/domain/demo.js';
import { beneficiaryUndosCollection } from '../../subgraphs/payments/src/beneficiaries/datasource.js';
import { startTestStack, type TestStack } from '../support/harness.js';

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
  // eslint-disable-next-line @typescript-eslint/no-unnecessary-condition -- beforeAll may have failed before assigning it.
  afterAll(() => stack?.stop());

  const undos = () => beneficiaryUndosCollection(stack.mongo.db('payments')).countDocuments({ SvcBeneficiaryId: 'demo_beneficiary_2' });
  const modify = (key: string, body: unknown) =>
    stack.rest<Modification>('POST', '/beneficiary/demo_beneficiary_2', { headers: { token, 'idempotency-key': key }, body });

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
    expect(answers.some((a) => a.status === 200 && a.body.success === true)).toBe(true);
    for (const answer of answers) expect([200, 409]).toContain(answer.status);
    const ids = new Set(answers.filter((a) => a.status === 200).map((a) => a.body.undo?.id));
    expect(ids.size).toBe(1);
  });

  it('keeps keys per caller, and ignores them on reads', async () => {
    // The aggregator's mutation with the user's key string is its own request: keys shared across callers would answer 422.
    const login = await stack.rest<{ data: { token: string } }>('POST', '/auth/get-token', {
      body: { user: { login: DEMO.aggregatorLogin, password: DEMO.aggregatorPassword } },
    });
    const generated = await stack.rest<{ code: string }>('POST', '/akepa/document/generate', {
      headers: { 'x-svc-token': login.body.data.token, 'idempotency-key': 'key-replay-1' },
      body: { customerId: 'demo_customer_2', entityId: 'demo_customer_2', documentType: 'driverLicense' },
    });
    expect(generated.status).toBe(200);
    expect(generated.headers.get('idempotent-replayed')).toBeNull();
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

  it('refuses a malformed key with 400 naming the header, and changes nothing', async () => {
    const before = await undos();
    const refused = await modify('k'.repeat(256), { name: 'Sam G.' });
    expect(refused.status).toBe(400);
    expect(refused.body.error).toMatchObject({ code: 'VALIDATION_FAILED', field: 'idempotency-key' });
    expect(await undos()).toBe(before);
  });

  it('does not keep a refusal: the same request with the same key is decided again', async () => {
    const missing = () =>
      stack.rest<Modification>('POST', '/beneficiary/no_such_beneficiary', {
        headers: { token, 'idempotency-key': 'key-refused-1' },
        body: { name: 'X' },
      });
    expect((await missing()).status).toBe(404);
    const again = await missing();
    expect(again.status).toBe(404);
    expect(again.headers.get('idempotent-replayed')).toBeNull();
  });

  it('never keeps a GraphQL login, even spread from a fragment', async () => {
    const query =
      'mutation { ...Login } fragment Login on Mutation { login(input: { channel: "internet", userName: "demo.user", password: "Demo#Pass2026" }) { token } }';
    const first = await stack.graphql<{ login: { token: string } }>(query, {}, { 'idempotency-key': 'key-login-graphql' });
    const again = await stack.graphql<{ login: { token: string } }>(query, {}, { 'idempotency-key': 'key-login-graphql' });
    expect(first.body.data?.login.token).toBeTruthy();
    expect(again.headers.get('idempotent-replayed')).toBeNull();
    expect(again.body.data?.login.token).not.toBe(first.body.data?.login.token);
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
