import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { DEMO } from '../../platform/domain/demo.js';
import type { HttpService } from '../../platform/http/server.js';
import { createLogger } from '../../platform/runtime/logger.js';
import { configFor } from '../../platform/runtime/config-slices.js';
import { start as startGateway } from '../../gateway/src/index.js';
import { start as startRestAdapter } from '../../rest-adapter/src/index.js';
import { subgraphUrlsOf } from '../../scripts/stack.js';
import { startTestStack, type TestStack } from '../support/harness.js';

interface Answer {
  status: number;
  body: unknown;
  replayed: string | null;
  retryAfter: string | null;
}

/** The body without the request ids, which every request has its own of. */
function withoutRequestIds(value: unknown): unknown {
  if (Array.isArray(value)) return value.map(withoutRequestIds);
  if (value === null || typeof value !== 'object') return value;
  return Object.fromEntries(
    Object.entries(value)
      .filter(([key]) => key !== 'requestId')
      .map(([key, inner]) => [key, withoutRequestIds(inner)]),
  );
}

// The stack's adapter runs beside its gateway and sends its operations without HTTP; a second
// adapter here sends the same operations to the same gateway over HTTP, as it does when the two
// run as separate processes. Both must answer every request the same way.
describe('the REST adapter beside the gateway and in a process of its own', () => {
  let stack: TestStack;
  let overHttp: HttpService;
  let token: string;

  beforeAll(async () => {
    stack = await startTestStack({ IN_PROCESS_CALLS: 'adapter' });
    overHttp = await startRestAdapter({
      config: configFor('rest-adapter', { ...stack.config, gatewayUrl: `${stack.gateway.url}/graphql` }),
      logger: createLogger('silent'),
      port: 0,
    });
    token = await stack.loginDemo();
  });
  afterAll(async () => {
    // eslint-disable-next-line @typescript-eslint/no-unnecessary-condition -- beforeAll may have failed before assigning it.
    await overHttp?.close();
    // eslint-disable-next-line @typescript-eslint/no-unnecessary-condition -- beforeAll may have failed before assigning it.
    await stack?.stop();
  });

  /** Request ids of the answers, which differ between any two requests (kept out of the comparisons). */
  const requestIds = new Map<Answer, string | null>();
  const send = async (
    base: string,
    method: string,
    path: string,
    headers: Record<string, string> = {},
    body?: unknown,
  ): Promise<Answer> => {
    const response = await fetch(`${base}${path}`, {
      method,
      headers: { ...(body === undefined ? {} : { 'content-type': 'application/json' }), ...headers },
      ...(body === undefined ? {} : { body: JSON.stringify(body) }),
    });
    const text = await response.text();
    const answer = {
      status: response.status,
      body: withoutRequestIds(text === '' ? null : JSON.parse(text)),
      replayed: response.headers.get('idempotent-replayed'),
      retryAfter: response.headers.get('retry-after'),
    };
    requestIds.set(answer, response.headers.get('x-request-id'));
    return answer;
  };
  /** Whether the gateway answered this request in this process (its access-log line says so). */
  const answeredInProcess = (answer: Answer) =>
    stack.logs.some(
      (line) =>
        line.service === 'gateway' && line.msg === 'request' && line.from === 'this process' && line.requestId === requestIds.get(answer),
    );
  /** The same request to both adapters, one after the other. */
  const both = async (method: string, path: string, headers: Record<string, string> = {}, body?: unknown) => [
    await send(stack.restAdapter.url, method, path, headers, body),
    await send(overHttp.url, method, path, headers, body),
  ];

  it('answers reads, refusals and validation errors alike', async () => {
    // The last two are refused by the adapter itself, the others answered by the gateway.
    const requests: Array<[string, string, Record<string, string>, unknown?]> = [
      ['GET', '/restrictions', { token }],
      ['GET', `/accounts/${DEMO.accountId}/transactions/latest`, { token }],
      ['GET', '/restrictions', { token: 'not-a-token' }],
      ['POST', '/cards/no_such_card/on', { token }],
      ['GET', '/restrictions', {}],
      ['POST', `/cards/${DEMO.cardIds[0]}`, { token }, { name: 'x'.repeat(51) }],
    ];
    const statuses: number[] = [];
    const inProcess: boolean[] = [];
    const apartInProcess: boolean[] = [];
    for (const [method, path, headers, body] of requests) {
      const [beside, apart] = await both(method, path, headers, body);
      expect(apart, `${method} ${path}`).toEqual(beside);
      statuses.push(beside!.status);
      inProcess.push(answeredInProcess(beside!));
      apartInProcess.push(answeredInProcess(apart!));
    }
    expect(statuses).toEqual([200, 200, 401, 404, 401, 400]);
    // The stack's adapter did hand its operations to the gateway in this process; the other did not.
    expect(inProcess).toEqual([true, true, true, true, false, false]);
    expect(apartInProcess).toEqual([false, false, false, false, false, false]);
  });

  it('keeps an Idempotency-Key across the two: a repeat through either is the kept answer', async () => {
    for (const [key, firstBase, repeatBase] of [
      ['transport-key-1', stack.restAdapter.url, overHttp.url],
      ['transport-key-2', overHttp.url, stack.restAdapter.url],
    ] as const) {
      const headers = { token, 'idempotency-key': key };
      const first = await send(firstBase, 'POST', '/beneficiary/demo_beneficiary_2', headers, { name: `Sam ${key.at(-1)}.` });
      const again = await send(repeatBase, 'POST', '/beneficiary/demo_beneficiary_2', headers, { name: `Sam ${key.at(-1)}.` });
      expect(first.status, key).toBe(200);
      expect(first.replayed, key).toBeNull();
      expect(again, key).toEqual({ ...first, replayed: 'true' });
    }
  });
});

// With IN_PROCESS_CALLS=all the stack's gateway calls the subgraphs beside it (and resolves
// sessions) in this process; a second gateway here, given no transport (HTTP alone), calls the same subgraphs over HTTP, as it does
// when they run as processes of their own. Both must answer every operation the same way.
describe('the gateway beside its subgraphs and apart from them', () => {
  let stack: TestStack;
  let overHttp: HttpService;
  let token: string;

  beforeAll(async () => {
    stack = await startTestStack({ IN_PROCESS_CALLS: 'all' });
    overHttp = await startGateway({
      config: configFor('gateway', { ...stack.config, subgraphUrls: subgraphUrlsOf(stack.subgraphs) }),
      logger: createLogger('silent'),
      bus: stack.bus,
      port: 0,
    });
    token = await stack.loginDemo();
  });
  afterAll(async () => {
    // eslint-disable-next-line @typescript-eslint/no-unnecessary-condition -- beforeAll may have failed before assigning it.
    await overHttp?.close();
    // eslint-disable-next-line @typescript-eslint/no-unnecessary-condition -- beforeAll may have failed before assigning it.
    await stack?.stop();
  });

  const post = async (base: string, query: string, variables: Record<string, unknown>, headers: Record<string, string>) => {
    const response = await fetch(`${base}/graphql`, {
      method: 'POST',
      headers: { 'content-type': 'application/json', ...headers },
      body: JSON.stringify({ query, variables }),
    });
    return { status: response.status, body: withoutRequestIds(await response.json()), requestId: response.headers.get('x-request-id') };
  };
  /** The subgraph requests a gateway request made, by how they arrived. */
  const subgraphCalls = (requestId: string | null) =>
    stack.logs
      .filter((line) => line.msg === 'request' && line.requestId === requestId && String(line.service).endsWith('-subgraph'))
      .map((line) => (line.from === 'this process' ? 'in process' : 'http'));

  it('answers queries across subgraphs, mutations and refusals alike, and calls the subgraphs beside it in this process', async () => {
    const operations: Array<[string, Record<string, unknown>, Record<string, string>]> = [
      [
        '{ me { SvcUserId firstName cards { SvcCardId num status account { SvcAccountId currency } } restrictions { restrictionName isAllowed } } }',
        {},
        { token },
      ],
      ['query Latest($id: ID!) { latestTransactions(SvcAccountId: $id) { transactionId amount } }', { id: DEMO.accountId }, { token }],
      [
        'mutation Rename($id: ID!) { modifyCard(SvcCardId: $id, input: { name: "Travel" }) { success card { SvcCardId name } } }',
        { id: DEMO.cardIds[1] },
        { token },
      ],
      ['{ me { SvcUserId } }', {}, { token: 'not-a-token' }],
      ['{ me { SvcUserId } }', {}, {}],
      ['query Other($id: ID!) { latestTransactions(SvcAccountId: $id) { transactionId } }', { id: 'no_such_account' }, { token }],
    ];
    const statuses: number[] = [];
    for (const [query, variables, headers] of operations) {
      const beside = await post(stack.gateway.url, query, variables, headers);
      const apart = await post(overHttp.url, query, variables, headers);
      expect(apart.body, `${query} ${JSON.stringify(apart.body)}`).toEqual(beside.body);
      expect(apart.status, query).toBe(beside.status);
      statuses.push(beside.status);
      if (beside.status === 200) {
        expect(subgraphCalls(beside.requestId).length, query).toBeGreaterThan(0);
        expect(new Set(subgraphCalls(beside.requestId)), query).toEqual(new Set(['in process']));
        expect(new Set(subgraphCalls(apart.requestId)), query).toEqual(new Set(['http']));
      }
    }
    expect(statuses).toEqual([200, 200, 200, 401, 200, 200]);
  });

  it('goes over HTTP to a subgraph once it closes, and finds it unavailable', async () => {
    const payments = stack.subgraphs.payments;
    await payments.close();
    const answer = await post(stack.gateway.url, '{ me { SvcUserId accounts { SvcAccountId } } }', {}, { token });
    expect(answer.status).toBe(200);
    const body = answer.body as { data: { me: { SvcUserId: string; accounts: unknown } }; errors: Array<{ extensions: { code: string } }> };
    expect(body.data.me).toEqual({ SvcUserId: DEMO.userId, accounts: null });
    expect(body.errors[0]?.extensions.code).toBe('UNAVAILABLE');
  });
});
