import assert from 'node:assert/strict';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { DEMO } from '../../platform/domain/demo.js';
import { ownValue } from '../../platform/contracts/own.js';
import { buildPostmanCollection } from '../../rest-adapter/src/contract/collection.js';
import type { OpenApiDocument } from '../../rest-adapter/src/contract/openapi.js';
import { missingDocumentedFields } from '../../rest-adapter/src/routes/documented.js';
import { ROUTES } from '../../rest-adapter/src/routes/index.js';
import { contractChecker } from '../support/contract.js';
import { startTestStack, type TestStack } from '../support/harness.js';

/** A 1×1 PNG, for the multipart routes. */
const PNG = Buffer.from('iVBORw0KGgoAAAANSUhEUgAAAAEAAAABCAYAAAAfFcSJAAAADUlEQVR42mNk+M9QDwADhgGAWjR9awAAAABJRU5ErkJggg==', 'base64');

interface ErrorBody {
  code?: string;
  field?: string;
  message?: string;
  error?: { code: string; field?: string; message: string };
}

describe('the REST contract over real HTTP', () => {
  let stack: TestStack;
  let token: string;
  let svcToken: string;

  beforeAll(async () => {
    // The collection geocodes.
    stack = await startTestStack({ GEOCODER_PRELOAD: 'true' });
    token = await stack.loginDemo();
    const login = await stack.rest<{ data: { token: string } }>('POST', '/auth/get-token', {
      body: { user: { login: DEMO.aggregatorLogin, password: DEMO.aggregatorPassword } },
    });
    svcToken = login.body.data.token;
  });
  // eslint-disable-next-line @typescript-eslint/no-unnecessary-condition -- beforeAll may have failed before assigning it.
  afterAll(() => stack?.stop());

  const gatewaySaw = (requestId: string | null) =>
    stack.logs.some((line) => line.service === 'gateway' && line.requestId === requestId && line.msg === 'request');

  it('serves the OpenAPI document the tests check against', async () => {
    const response = await stack.restFetch('/openapi.json');
    expect(response.status).toBe(200);
    expect(response.headers.get('content-type')).toMatch(/^application\/json/);
    expect((await response.json()) as OpenApiDocument).toEqual(JSON.parse(JSON.stringify(contractChecker().document)));
  });

  describe("request validation from the document's schemas", () => {
    const cases: Array<{
      name: string;
      method: string;
      path: string;
      credential?: 'token' | 'x-svc-token';
      body?: unknown;
      status: number;
      field: string;
      code: string;
    }> = [
      {
        name: 'a login pattern',
        method: 'POST',
        path: '/auth/get-token',
        body: { user: { login: 'not a login!', password: 'x' } },
        status: 400,
        field: 'user.login',
        code: 'validation_failed',
      },
      {
        name: 'a missing wrapper',
        method: 'POST',
        path: '/auth/get-token',
        body: { login: 'x' },
        status: 400,
        field: 'user',
        code: 'required_element_missing',
      },
      {
        name: 'a missing channel (the spec: 404)',
        method: 'PUT',
        path: '/token',
        body: { userName: 'x' },
        status: 404,
        field: 'channel',
        code: 'REQUIRED_ELEMENT_MISSING',
      },
      {
        name: 'an unknown channel (the spec: 500)',
        method: 'PUT',
        path: '/token',
        body: { channel: 'fax' },
        status: 500,
        field: 'channel',
        code: 'INVALID_CHANNEL',
      },
      {
        name: 'a page over 1000',
        method: 'POST',
        path: '/akepa/list',
        credential: 'x-svc-token',
        body: { customerId: 'demo_customer_1', numberOfRecords: 5000 },
        status: 400,
        field: 'numberOfRecords',
        code: 'validation_failed',
      },
      {
        name: 'a view of a nested item',
        method: 'POST',
        path: '/akepa/update',
        credential: 'x-svc-token',
        body: {
          customerId: 'demo_customer_2',
          applicationId: 'demo_application_2',
          documents: [{ entityId: 'demo_customer_2', documentId: 'd1', view: 'side' }],
        },
        status: 400,
        field: 'documents[0].view',
        code: 'validation_failed',
      },
      {
        name: 'a routing number of 5 characters',
        method: 'POST',
        path: '/beneficiary/demo_beneficiary_1',
        credential: 'token',
        body: { routingNumber: '12345' },
        status: 400,
        field: 'routingNumber',
        code: 'VALIDATION_FAILED',
      },
      {
        name: 'an arn with <',
        method: 'POST',
        path: '/ibis/financial/retrieve',
        credential: 'x-svc-token',
        body: { arn: '<script>' },
        status: 400,
        field: 'arn',
        code: 'validation_failed',
      },
      {
        name: 'a number where a boolean goes',
        method: 'POST',
        path: '/cards/demo_card_1',
        credential: 'token',
        body: { isMain: 1 },
        status: 400,
        field: 'isMain',
        code: 'BAD_REQUEST',
      },
      {
        name: 'a path parameter outside its enum',
        method: 'POST',
        path: '/cards/demo_card_1/maybe',
        credential: 'token',
        status: 400,
        field: 'onoff',
        code: 'VALIDATION_FAILED',
      },
      {
        name: 'a null required property',
        method: 'POST',
        path: '/payment-link/merchant/get-token',
        credential: 'x-svc-token',
        body: { svcMerchantId: null },
        status: 400,
        field: 'svcMerchantId',
        code: 'required_element_missing',
      },
      {
        name: 'an alert without its type',
        method: 'POST',
        path: '/alerts',
        credential: 'token',
        body: [{ isEnabled: true }],
        status: 400,
        field: '[0].alertTypeId',
        code: 'REQUIRED_ELEMENT_MISSING',
      },
    ];

    it.each(cases)(
      'refuses $name with the documented status, naming the field, before any GraphQL call',
      async ({ method, path, credential, body, status, field, code }) => {
        const headers: Record<string, string> = credential ? { [credential]: credential === 'token' ? token : svcToken } : {};
        const response = await stack.rest<ErrorBody>(method, path, { headers, body });
        expect(response.status).toBe(status);
        const error = response.body.error ?? response.body;
        expect(error.code).toBe(code);
        expect(error.field).toBe(field);
        expect(error.message).toContain(field.replace(/^\[0\]\./, ''));
        expect(gatewaySaw(response.headers.get('x-request-id'))).toBe(false);
      },
    );

    it('passes a valid request on to the gateway', async () => {
      const response = await stack.rest('POST', '/akepa/list', {
        headers: { 'x-svc-token': svcToken },
        body: { customerId: 'demo_customer_1', numberOfRecords: 5 },
      });
      expect(response.status).toBe(200);
      expect(gatewaySaw(response.headers.get('x-request-id'))).toBe(true);
      // Security headers on every answer.
      expect(response.headers.get('x-content-type-options')).toBe('nosniff');
      expect(response.headers.get('cache-control')).toBe('no-store');
      expect(response.headers.get('x-frame-options')).toBe('DENY');
      expect(response.headers.get('referrer-policy')).toBe('no-referrer');
    });

    it('leaves a missing registration property to the graph, which locks the actor as the spec says', async () => {
      const response = await stack.rest<ErrorBody>('POST', '/prospect/registration', {
        headers: { token },
        body: { deviceTag: 'contract-device-1', preSegment: 'retail' },
      });
      expect(response.status).toBe(401);
      expect(response.body.error?.field).toBe('deviceData');
      expect(response.body.error?.message).toMatch(/locked/);
      expect(gatewaySaw(response.headers.get('x-request-id'))).toBe(true);
    });
  });

  it('answers every request of the collection with a documented response, most of them successes, each with every field its spec lists', async () => {
    stack.mongo.commands.reset();
    const collection = buildPostmanCollection(stack.restAdapter.url);
    const merchant = await stack.rest<{ data: { token: string } }>('POST', '/payment-link/merchant/get-token', {
      headers: { 'x-svc-token': svcToken },
      body: { svcMerchantId: DEMO.merchantId },
    });
    const customer = await stack.rest<{ data: { token: string } }>('POST', '/public/customer/payment/link', {
      body: { link: DEMO.sentLinkCode },
    });
    const values: Record<string, string> = {
      baseUrl: stack.restAdapter.url,
      token,
      svcToken,
      merchantJwt: merchant.body.data.token,
      customerJwt: customer.body.data.token,
    };
    const fill = (text: string) => text.replace(/\{\{(\w+)\}\}/g, (_, name: string) => ownValue(values, name) ?? '');
    // Requests that end a credential's life go last.
    const last = (name: string) => (name === 'DELETE /token' || name === 'POST /user/change-password' ? 1 : 0);
    const items = collection.item.flatMap((group) => group.item).sort((a, b) => last(a.name) - last(b.name));
    const statuses: Record<string, number> = {};
    // Every field the spec lists without marking it optional or conditional, in each success (null when it has no value).
    const missing: string[] = [];
    const checked: string[] = [];
    for (const item of items) {
      const { request } = item;
      const path = request.url.path
        .map((segment) =>
          segment.startsWith(':')
            ? encodeURIComponent(request.url.variable.find((v) => v.key === segment.slice(1))?.value || 'x')
            : segment,
        )
        .join('/');
      const query = request.url.query ? `?${request.url.query.map((q) => `${q.key}=${encodeURIComponent(q.value)}`).join('&')}` : '';
      const headers = Object.fromEntries(request.header.map((h) => [h.key, fill(h.value)]));
      let body: string | FormData | undefined;
      if (request.body?.mode === 'raw') body = request.body.raw;
      if (request.body?.mode === 'formdata') {
        const form = new FormData();
        form.append('file', new Blob([PNG], { type: 'image/png' }), 'logo.png');
        body = form;
      }
      // restFetch checks every answer against the document; a drift fails here.
      const response = await stack.restFetch(`/${path}${query}`, { method: request.method, headers, ...(body ? { body } : {}) });
      statuses[item.name] = response.status;
      const text = await response.text();
      assert(response.status < 500, `${item.name} answered ${response.status}: ${text}`);
      const route = ROUTES.find((r) => r.method === request.method && r.paths.includes(item.name.slice(item.name.indexOf(' ') + 1)));
      assert(route, `no route for ${item.name}`);
      if (response.status === 200 && route.documentedResponse) {
        const body = JSON.parse(text) as { data?: unknown };
        missing.push(
          ...missingDocumentedFields(route.documentedResponse, route.api === 'aggregator' ? body.data : body).map(
            (where) => `${item.name}: ${where}`,
          ),
        );
        checked.push(item.name);
      }
    }
    const succeeded = Object.values(statuses).filter((status) => status === 200).length;
    expect(succeeded, JSON.stringify(statuses, null, 1)).toBeGreaterThanOrEqual(Math.floor(items.length * 0.7));
    expect(missing).toEqual([]);
    expect(checked).toEqual(
      expect.arrayContaining(['POST /alerts', 'GET /restrictions', 'PUT /token', 'POST /payment-link/payment/refund-list']),
    );
  });

  it('has an index for the filter of every query the routes above made (and the jobs that ran meanwhile)', async () => {
    await stack.graphql(
      '{ me { cards { num account { balance } } accounts { transactions(first: 5) { edges { node { amount } } } } beneficiaries { name } restrictions { restrictionName } ious { IOUAccountId } } }',
      {},
      { token: await stack.loginDemo() },
    );
    // The dashboard's reads that no route makes: a card program's and a user's recent messages, links by status.
    const since = new Date(Date.now() - 24 * 60 * 60 * 1000).toISOString();
    const recent =
      'query ($since: DateTime!) { cardAuthorizationSummary(since: $since) { total } cardAuthorizationsConnection(since: $since, first: 5) { edges { cursor } } }';
    const aggregator = {
      'x-svc-token': await stack.issueToken({
        kind: 'aggregator',
        svcAggregatorId: DEMO.aggregatorId,
        login: DEMO.aggregatorLogin,
        tokenType: 'base',
      }),
    };
    for (const headers of [{ token: await stack.loginDemo() }, aggregator] as Array<Record<string, string>>)
      expect((await stack.graphql(recent, { since }, headers)).body.errors).toBeUndefined();
    expect((await stack.graphql('{ paymentLinkStatusCounts { total } }', {}, aggregator)).body.errors).toBeUndefined();
    const shapes = stack.mongo.commands.queryShapes();
    expect(shapes.length).toBeGreaterThan(20);
    const indexes = new Map<string, string[][]>();
    const unserved: string[] = [];
    for (const shape of shapes) {
      const where = `${shape.database}.${shape.collection}`;
      if (!indexes.has(where)) {
        const db = stack.mongo.client.db(shape.database);
        const list = await db
          .collection(shape.collection)
          .indexes()
          .catch(() => []);
        indexes.set(
          where,
          list.map((index) => Object.keys(index.key)),
        );
      }
      // Served: the filter names the first field of an index (by _id, the primary key).
      const served = indexes.get(where)!.some((keys) => shape.fields.includes(keys[0]!));
      if (!served) unserved.push(`${where} ${shape.command} {${shape.fields.join(', ')}}`);
    }
    expect(unserved).toEqual([]);
  });
});
