import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { DEMO } from '../../platform/domain/demo.js';
import { startTestStack, type TestStack } from '../support/harness.js';

interface Page {
  edges: Array<{ cursor: string; node: Record<string, string> }>;
  pageInfo: { hasNextPage: boolean; hasPreviousPage: boolean; startCursor: string | null; endCursor: string | null };
}

describe('Relay connections beside the offset lists', () => {
  let stack: TestStack;
  let aggregator: Record<string, string>;
  let merchant: Record<string, string>;

  beforeAll(async () => {
    stack = await startTestStack();
    const token = (
      await stack.rest<{ data: { token: string } }>('POST', '/auth/get-token', {
        body: { user: { login: DEMO.aggregatorLogin, password: DEMO.aggregatorPassword } },
      })
    ).body.data.token;
    aggregator = { 'x-svc-token': token };
    const jwt = (
      await stack.rest<{ data: { token: string } }>('POST', '/payment-link/merchant/get-token', {
        headers: aggregator,
        body: { svcMerchantId: DEMO.merchantId },
      })
    ).body.data.token;
    merchant = { 'x-svc-jwtoken': jwt };
  });
  // eslint-disable-next-line @typescript-eslint/no-unnecessary-condition -- beforeAll may have failed before assigning it.
  afterAll(() => stack?.stop());

  /** Reads one page of a connection field with the given arguments. */
  const page = async (field: string, args: string, selection: string, headers: Record<string, string>): Promise<Page> => {
    const response = await stack.graphql<Record<string, Page>>(
      `{ ${field}(${args}) { edges { cursor node { ${selection} } } pageInfo { hasNextPage hasPreviousPage startCursor endCursor } } }`,
      {},
      headers,
    );
    expect(response.body.errors).toBeUndefined();
    return response.body.data![field]!;
  };

  /** Every node's key, walked forward two at a time, then the same walked back from the end. */
  const walk = async (field: string, filter: string, key: string, selection: string, headers: Record<string, string>) => {
    const forward: string[] = [];
    let after: string | null = null;
    let last: Page | null = null;
    for (let n = 0; n < 500; n += 1) {
      last = await page(field, [filter, 'first: 2', after ? `after: "${after}"` : ''].filter(Boolean).join(', '), selection, headers);
      forward.push(...last.edges.map((edge) => edge.node[key]!));
      if (!last.pageInfo.hasNextPage) break;
      after = last.pageInfo.endCursor;
    }
    const backward: string[] = [];
    let before = last?.pageInfo.endCursor ?? null;
    if (before) backward.push(forward.at(-1)!);
    for (let n = 0; n < 500 && before; n += 1) {
      const previous = await page(field, [filter, 'last: 3', `before: "${before}"`].filter(Boolean).join(', '), selection, headers);
      backward.unshift(...previous.edges.map((edge) => edge.node[key]!));
      if (!previous.pageInfo.hasPreviousPage) break;
      before = previous.pageInfo.startCursor;
    }
    return { forward, backward };
  };

  it('walks each paged list, forward and back, to the records of its offset list in the same order', async () => {
    const lists: Array<[string, string, string, string, string, Record<string, string>]> = [
      [
        'paymentLinksConnection',
        '',
        'paymentLinks(numberOfRecords: 1000) { items { svcTransactionId } }',
        'paymentLinks',
        'svcTransactionId',
        merchant,
      ],
      [
        'refundsConnection',
        'filter: { paymentType: ach }',
        'refundList(filter: { paymentType: ach, numberOfRecords: 1000 }) { items { svcTransactionId } }',
        'refundList',
        'svcTransactionId',
        aggregator,
      ],
      ['deliveriesConnection', '', 'deliveries(numberOfRecords: 1000) { items { deliveryId } }', 'deliveries', 'deliveryId', aggregator],
      [
        'cardWebhookDeliveriesConnection',
        '',
        'cardWebhookDeliveries(numberOfRecords: 1000) { items { deliveryId } }',
        'cardWebhookDeliveries',
        'deliveryId',
        aggregator,
      ],
      [
        'applicationsConnection',
        'customerId: "demo_customer_1"',
        'applications(input: { customerId: "demo_customer_1" }) { items { applicationId } }',
        'applications',
        'applicationId',
        aggregator,
      ],
    ];
    for (const [field, filter, offsetQuery, offsetField, key, headers] of lists) {
      const offset = await stack.graphql<Record<string, { items: Array<Record<string, string>> }>>(`{ ${offsetQuery} }`, {}, headers);
      expect(offset.body.errors, `${field}: ${JSON.stringify(offset.body.errors)}`).toBeUndefined();
      const expected = offset.body.data![offsetField]!.items.map((item) => item[key]!);
      // The demo data gives the links and refunds several pages of two.
      if (field === 'paymentLinksConnection' || field === 'refundsConnection') expect(expected.length, field).toBeGreaterThan(2);
      const { forward, backward } = await walk(field, filter, key, key, headers);
      expect(forward, field).toEqual(expected);
      expect(backward, field).toEqual(expected);
    }
  });

  it('pages the return-rate reports, whose nodes are report items', async () => {
    const first = await page('achReturnRatesConnection', 'first: 3', 'returnRates { maxDate }', aggregator);
    expect(first.edges).toHaveLength(3);
    expect(first.pageInfo).toMatchObject({ hasNextPage: true, hasPreviousPage: false });
    const next = await page(
      'achReturnRatesConnection',
      `first: 3, after: "${first.pageInfo.endCursor}"`,
      'returnRates { maxDate }',
      aggregator,
    );
    expect(next.pageInfo.hasPreviousPage).toBe(true);
    const dates = [...first.edges, ...next.edges].map(
      (edge) => (edge.node as unknown as { returnRates: { maxDate: string } }).returnRates.maxDate,
    );
    expect(dates).toEqual([...dates].sort().reverse());
  });

  it("refuses mixed directions, foreign cursors and a filter's own paging, naming the argument", async () => {
    const refusal = async (query: string, headers: Record<string, string>) =>
      (await stack.graphql(query, {}, headers)).body.errors?.[0]?.extensions;
    expect(await refusal('{ paymentLinksConnection(first: 2, last: 2) { pageInfo { hasNextPage } } }', merchant)).toMatchObject({
      code: 'VALIDATION_FAILED',
      field: 'last',
    });
    expect(await refusal('{ paymentLinksConnection(after: "bm90LWEtY3Vyc29y") { pageInfo { hasNextPage } } }', merchant)).toMatchObject({
      code: 'VALIDATION_FAILED',
      field: 'after',
    });
    expect(await refusal('{ refundsConnection(filter: { skipRecords: 5 }) { pageInfo { hasNextPage } } }', aggregator)).toMatchObject({
      code: 'VALIDATION_FAILED',
      field: 'filter.skipRecords',
    });
    // The caller is checked before anything is read, an empty page included.
    expect(await refusal('{ deliveriesConnection(last: 1, before: "b2Zmc2V0OjA") { pageInfo { hasNextPage } } }', {})).toMatchObject({
      code: 'UNAUTHENTICATED',
    });
    // Access is the offset list's: a merchant's JWT reads no aggregator's refunds.
    expect(await refusal('{ refundsConnection { pageInfo { hasNextPage } } }', merchant)).toMatchObject({
      code: expect.stringMatching(/FORBIDDEN|UNAUTHENTICATED/) as string,
    });
  });
});
