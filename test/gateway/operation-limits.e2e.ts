import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { DEMO } from '../../platform/domain/demo.js';
import { loadOperation } from '../../rest-adapter/src/operations.js';
import { startTestStack, type TestStack } from '../support/harness.js';

describe('GraphQL operation limits at the gateway', () => {
  let stack: TestStack;
  let token: string;

  beforeAll(async () => {
    stack = await startTestStack();
    token = await stack.loginDemo();
  });
  // eslint-disable-next-line @typescript-eslint/no-unnecessary-condition -- beforeAll may have failed before assigning it.
  afterAll(() => stack?.stop());

  const nest = (levels: number): string => (levels === 0 ? 'firstName' : `cards { user { ${nest(levels - 1)} } }`);

  it('answers an operation within every limit', async () => {
    const response = await stack.graphql(`{ me { ${nest(4)} } }`, {}, { token });
    expect(response.status).toBe(200);
    expect(response.body.errors).toBeUndefined();
    expect(response.headers.get('x-content-type-options')).toBe('nosniff');
    expect(response.headers.get('cache-control')).toBe('no-store');
    const requestId = response.headers.get('x-request-id');
    expect(stack.logs.some((line) => line.requestId === requestId && line.service === 'cards-subgraph' && line.path === '/graphql')).toBe(
      true,
    );
  });

  it.each([
    ['too deep', `{ me { ${nest(6)} } }`, /depth is 14; at most 10/],
    ['too many aliases', `{ ${Array.from({ length: 16 }, (_, i) => `a${i}: me { firstName }`).join(' ')} }`, /aliases is 16; at most 15/],
    [
      'too many root fields',
      `{ ${Array.from({ length: 11 }, (_, i) => `r${i}: transactionTypes { name }`).join(' ')} }`,
      /root fields is 11; at most 10/,
    ],
    [
      'too costly',
      '{ me { accounts { transactions(first: 1000) { edges { node { transactionId amount currency narrative dtsValue labels } } } } } }',
      /cost is \d+; at most 50000/,
    ],
    [
      "too costly by a variable's default",
      'query ($n: Int = 100000) { me { accounts { transactions(first: $n) { edges { node { amount } } } } } }',
      /cost is \d+; at most 50000/,
    ],
    [
      'too costly by a size inside an input object',
      '{ refundList(filter: { numberOfRecords: 100000 }) { items { svcTransactionId statusChangeHistory { status } } } }',
      /cost is \d+; at most 50000/,
    ],
  ])('refuses an operation %s with 400 before any subgraph is called', async (_name, query, message) => {
    const response = await stack.graphql(query, {}, { token });
    expect(response.status).toBe(400);
    // The session lookup aside, no subgraph saw the request.
    const requestId = response.headers.get('x-request-id');
    expect(
      stack.logs.filter((line) => line.requestId === requestId && String(line.service).endsWith('-subgraph') && line.path === '/graphql'),
    ).toEqual([]);
    expect(response.body.errors?.[0]?.extensions?.code).toBe('OPERATION_LIMIT_EXCEEDED');
    expect(response.body.errors?.[0]?.message).toMatch(message);
  });

  it('measures a document by the variables of each request, and one without variables the same every time', async () => {
    const paged = 'query Paged($n: Int!) { me { accounts { transactions(first: $n) { edges { node { amount } } } } } }';
    const codes: unknown[] = [];
    for (const n of [5, 100_000, 5]) {
      const response = await stack.graphql(paged, { n }, { token });
      codes.push(response.body.errors?.[0]?.extensions?.code ?? response.status);
    }
    expect(codes).toEqual([200, 'OPERATION_LIMIT_EXCEEDED', 200]);
    const costly = '{ me { accounts { transactions(first: 100000) { edges { node { amount } } } } } }';
    for (let i = 0; i < 2; i += 1) expect((await stack.graphql(costly, {}, { token })).status).toBe(400);
  });

  it("does not measure a trusted document: the REST adapter's refund list runs at its largest page, which ad hoc would cost too much", async () => {
    const aggregator = {
      'x-svc-token': (
        await stack.rest<{ data: { token: string } }>('POST', '/auth/get-token', {
          body: { user: { login: DEMO.aggregatorLogin, password: DEMO.aggregatorPassword } },
        })
      ).body.data.token,
    };
    const registered = loadOperation('refund-list.graphql');
    const variables = { filter: { numberOfRecords: 1000 } };
    const trusted = await stack.graphql(registered, variables, aggregator);
    expect(trusted.body.errors).toBeUndefined();
    // The same operation with one more space is not the registered document: it is measured, and refused.
    const adHoc = await stack.graphql(`${registered} `, variables, aggregator);
    expect(adHoc.body.errors?.[0]?.extensions?.code).toBe('OPERATION_LIMIT_EXCEEDED');
  });

  it('answers a small request with many bad input members with a small answer: messages cut, at most 20 errors and a count of the rest', async () => {
    const input: Record<string, string> = {
      channel: 'internet',
      userName: 'nobody',
      password: 'x',
      ...Object.fromEntries(Array.from({ length: 200 }, (_, i) => [`unknown${i}`, 'v'.repeat(200)])),
    };
    const response = await stack.graphql('mutation ($input: LoginInput!) { login(input: $input) { token } }', { input });
    expect(response.status).toBe(400);
    const errors = response.body.errors!;
    expect(errors).toHaveLength(21);
    expect(errors.at(-1)?.message).toBe('180 more errors are not shown.');
    expect(errors.every((error) => error.message.length <= 1000)).toBe(true);
    // The start and the end of each message stay: the member it names and why it is refused.
    expect(errors[0]?.message).toMatch(/Field "unknown0" is not defined by type "LoginInput"/);
    expect(JSON.stringify(response.body).length).toBeLessThan(40_000);
  });

  it('refuses a body nested thousands of levels deep with 400, at the gateway and through the REST adapter', async () => {
    // Written out, not stringified: serializing 5,000 levels would overflow this test's own stack.
    const deep = `${'{"a":'.repeat(5000)}"x"${'}'.repeat(5000)}`;
    const response = await fetch(`${stack.gateway.url}/graphql`, {
      method: 'POST',
      headers: { 'content-type': 'application/json' },
      body: `{"query":"mutation ($input: LoginInput!) { login(input: $input) { token } }","variables":{"input":{"channel":"internet","userName":"u","password":"p","deviceData":${deep}}}}`,
    });
    expect(response.status).toBe(400);
    expect(((await response.json()) as { errors: Array<{ message: string }> }).errors[0]?.message).toMatch(/nests deeper than 64 levels/);
    const rest = await stack.rest<{ error: { code: string } }>('PUT', '/token', {
      rawBody: `{"channel":"internet","userName":"u","password":"p","deviceData":${deep}}`,
    });
    expect(rest.status).toBe(400);
    expect(rest.body.error.code).toBe('BAD_REQUEST');
  });

  it('refuses at once a small query whose fragments double at every level', async () => {
    const fragments = Array.from({ length: 24 }, (_, i) =>
      i === 23
        ? `fragment F${i} on Query { __typename transactionTypes { name } }`
        : `fragment F${i} on Query { ...F${i + 1} ...F${i + 1} }`,
    );
    const started = Date.now();
    const response = await stack.graphql(`query { ...F0 } ${fragments.join(' ')}`, {}, { token });
    expect(response.status).toBe(400);
    expect(response.body.errors?.[0]?.extensions?.code).toBe('OPERATION_LIMIT_EXCEEDED');
    expect(Date.now() - started).toBeLessThan(3000);
  });

  it('counts a mutation repeated under aliases, so one request cannot carry a brute force', async () => {
    const attempts = Array.from(
      { length: 16 },
      (_, i) => `t${i}: login(input: { channel: "internet", userName: "demo.user", password: "guess${i}" }) { token }`,
    ).join(' ');
    const response = await stack.graphql(`mutation { ${attempts} }`);
    expect(response.status).toBe(400);
    expect(response.body.errors?.[0]?.extensions?.code).toBe('OPERATION_LIMIT_EXCEEDED');
  });

  it('refuses a GET query that a browser could send cross-site (CSRF prevention) and a batch', async () => {
    const get = await fetch(`${stack.gateway.url}/graphql?query=${encodeURIComponent('{ transactionTypes { name } }')}`);
    expect(get.status).toBe(400);
    const batch = await fetch(`${stack.gateway.url}/graphql`, {
      method: 'POST',
      headers: { 'content-type': 'application/json' },
      body: JSON.stringify([{ query: '{ transactionTypes { name } }' }, { query: '{ transactionTypes { name } }' }]),
    });
    expect(batch.status).toBe(400);
  });
});
