import { readFileSync } from 'node:fs';
import path from 'node:path';
import { Validator } from '@seriousme/openapi-schema-validator';
import { describe, expect, it } from 'vitest';
import { Ajv2020 } from 'ajv/dist/2020.js';
import addFormats from 'ajv-formats';
import { buildPostmanCollection } from '../../rest-adapter/src/contract/collection.js';
import { RequestValidator } from '../../rest-adapter/src/contract/request-validation.js';
import { openApiPath } from '../../rest-adapter/src/contract/openapi.js';
import { RouteInputError, ROUTES, type Route } from '../../rest-adapter/src/routes/index.js';
import { ALERT, fieldsOf, listOf, missingDocumentedFields } from '../../rest-adapter/src/routes/documented.js';
import { REPO_ROOT } from '../../platform/runtime/config.js';
import { ContractChecker, documentedSchemaProblems, payloadSchema } from '../support/contract.js';

const SPECS_DIR = path.join(REPO_ROOT, 'specs');
const checker = new ContractChecker();
const { document } = checker;

/** Every `METHOD /path` a spec names, and every bare path of three or more segments, with the spelling variants it allows. */
function documentedEndpoints(file: string): { pairs: Array<[string, string]>; bare: string[] } {
  const text = readFileSync(path.join(SPECS_DIR, file), 'utf8');
  const pairs: Array<[string, string]> = [];
  for (const match of text.matchAll(/\b(GET|PUT|POST|DELETE) (\/[A-Za-z0-9_\-/:]+)/g)) {
    // `GET /confirm/email/...` is shorthand for a path given in full elsewhere.
    if (text.startsWith('...', match.index + match[0].length)) continue;
    pairs.push([match[1]!, match[2]!]);
  }
  const bare = [...text.matchAll(/(?<![\w/}])(\/[A-Za-z0-9_-]+(?:\/[A-Za-z0-9_\-:]+){2,})(?![\w/])/g)].map((m) => m[1]!);
  // "Path segment `account` may also be written `accounts`": every combination of spellings is a path.
  const variants = [...text.matchAll(/`(\w+)` may also be written `(\w+)`/g)].map((m) => [m[1]!, m[2]!] as const);
  const spellings = (p: string): string[] =>
    variants.reduce(
      (paths, [one, other]) =>
        paths.flatMap((q) =>
          q.split('/').includes(one)
            ? [
                q,
                q
                  .split('/')
                  .map((s) => (s === one ? other : s))
                  .join('/'),
              ]
            : [q],
        ),
      [p],
    );
  return { pairs: pairs.flatMap(([method, p]) => spellings(p).map((q): [string, string] => [method, q])), bare: bare.flatMap(spellings) };
}

/** The document's operation that serves a concrete or templated spec path, as the adapter's router would pick it. */
function operationFor(method: string, specPath: string) {
  const concrete = specPath.replace(/:([A-Za-z0-9_]+)/g, 'x');
  const exact = document.paths[openApiPath(specPath)]?.[method.toLowerCase()];
  if (exact) return exact;
  const template = Object.keys(document.paths).find(
    (t) => new RegExp(`^${t.replace(/\{[^}]+\}/g, '[^/]+')}$`).test(concrete) && document.paths[t]![method.toLowerCase()],
  );
  return template ? document.paths[template]![method.toLowerCase()] : undefined;
}

describe('the OpenAPI document', () => {
  it('is a valid OpenAPI 3.1 document', async () => {
    const result = await new Validator().validate(document);
    expect(result.errors).toBeUndefined();
    expect(result.valid).toBe(true);
    expect(document.openapi).toBe('3.1.0');
  });

  it.each(['end-user-api.md', 'aggregator-api.md'])('has every path the spec %s names, with its method and every spelling', (file) => {
    const { pairs, bare } = documentedEndpoints(file);
    expect(pairs.length).toBeGreaterThan(10);
    const missing = pairs.filter(([method, p]) => !operationFor(method, p)).map(([method, p]) => `${method} ${p}`);
    expect(missing).toEqual([]);
    // Spelling variants are paths of their own (aliases), not only matches of a template.
    for (const [method, p] of pairs.filter(([, p]) => /\/accounts?\/.*\/transactions?\//.test(p)))
      expect(document.paths[openApiPath(p)]?.[method.toLowerCase()]).toBeDefined();
    const unserved = bare.filter((p) => !['get', 'put', 'post', 'delete'].some((method) => operationFor(method, p)));
    expect(unserved).toEqual([]);
  });

  it('has one operation for every route at every path, with its credential, and marks the designed ones', () => {
    for (const route of ROUTES) {
      for (const routePath of route.paths) {
        const operation = document.paths[openApiPath(routePath)]?.[route.method.toLowerCase()];
        expect(operation, `${route.method} ${routePath}`).toBeDefined();
        expect(operation!.security).toEqual(route.credential ? [{ [route.credential]: [] }] : []);
        expect(Boolean(operation!['x-designed'])).toBe(Boolean(route.designed));
        if (route.designed) expect(String(operation!.description)).toContain('**Designed**');
      }
    }
    const operations = Object.values(document.paths).reduce((n, item) => n + Object.keys(item).length, 0);
    expect(operations).toBe(ROUTES.reduce((n, route) => n + route.paths.length, 0));
  });

  it("documents the specs' own error statuses where they give them", () => {
    const responses = (method: string, p: string) => Object.keys(operationFor(method, p)!.responses);
    expect(responses('PUT', '/token')).toEqual(expect.arrayContaining(['400', '401', '404', '500']));
    expect(responses('DELETE', '/token')).toContain('500');
    expect(responses('POST', '/prospect/registration')).toEqual(expect.arrayContaining(['401', '404', '500']));
    expect(responses('POST', '/condor/card/add')).toContain('400');
    expect(responses('POST', '/auth/get-token')).toContain('401');
    expect(operationFor('POST', '/condor/card/add')!.deprecated).toBe(true);
  });

  it("takes its request schemas' rules from the specs", () => {
    const body = (method: string, p: string) =>
      (
        operationFor(method, p)!.requestBody as {
          content: Record<string, { schema: { properties: Record<string, Record<string, unknown>> } }>;
        }
      ).content['application/json']!.schema;
    const getToken = body('POST', '/auth/get-token').properties.user as { properties: Record<string, Record<string, unknown>> };
    expect(getToken.properties.login).toMatchObject({ minLength: 1, maxLength: 36, pattern: '^[A-Za-z0-9_]+$' });
    expect(getToken.properties.password).toMatchObject({ minLength: 1, maxLength: 50 });
    expect(body('POST', '/ibis/financial/retrieve').properties.reference).toMatchObject({ minLength: 1, maxLength: 32 });
    expect(body('POST', '/user/change-password').properties.newPassword).toMatchObject({ minLength: 8, maxLength: 50 });
    expect(JSON.stringify(body('POST', '/beneficiary/:SvcBeneficiaryId').properties.routingNumber)).toContain('"minLength":9');
    expect(JSON.stringify(body('POST', '/akepa/list').properties.numberOfRecords)).toContain('"maximum":1000');
  });
});

/** Every schema object the document holds where a schema goes, with where it is. */
function schemasOf(
  value: unknown,
  at: string,
  found: Array<[string, Record<string, unknown>]> = [],
): Array<[string, Record<string, unknown>]> {
  if (value === null || typeof value !== 'object') return found;
  for (const [key, member] of Object.entries(value as Record<string, unknown>)) {
    if (key === 'schema' && member && typeof member === 'object') found.push([`${at}/schema`, member as Record<string, unknown>]);
    else schemasOf(member, `${at}/${key}`, found);
  }
  return found;
}

describe("the document's schemas", () => {
  it('are valid JSON Schema 2020-12 under a strict compiler, every one of them', () => {
    const ajv = new Ajv2020({ strict: true, strictTypes: false, strictRequired: false });
    addFormats.default(ajv);
    const local = (schema: unknown) =>
      JSON.parse(JSON.stringify(schema).replaceAll('"#/components/schemas/', '"openapi.json#/$defs/')) as Record<string, unknown>;
    ajv.addSchema({ $id: 'openapi.json', $defs: local(document.components.schemas) });
    const schemas = schemasOf(document.paths, '#/paths');
    expect(schemas.length).toBeGreaterThan(300);
    for (const [at, schema] of schemas) expect(() => ajv.compile(local(schema)), at).not.toThrow();
    for (const name of Object.keys(document.components.schemas))
      expect(() => ajv.getSchema(`openapi.json#/$defs/${name}`), name).not.toThrow();
  });
});

describe('the fields the specs list in answers', () => {
  const alerts = ROUTES.find((r) => r.method === 'POST' && r.paths.includes('/alerts'))!;

  it("are named by every route: only a designed answer may be none of the specs' resources", () => {
    for (const route of ROUTES) {
      if (route.documentedResponse === null)
        expect(route.designed, `${route.method} ${route.paths[0]!} names no documented response`).toBeDefined();
    }
  });

  it("are in every route's answer schema, required (and nullable where the graph may have no value) unless the spec marks them optional or conditional", () => {
    const problems = ROUTES.flatMap((route) =>
      route.documentedResponse
        ? documentedSchemaProblems(document, route.documentedResponse, payloadSchema(document, route)).map(
            (problem) => `${route.method} ${route.paths[0]!} ${problem}`,
          )
        : [],
    );
    expect(problems).toEqual([]);
  });

  it("make an alert's parameters required and nullable, and leave its conditional fields optional", () => {
    const item = (
      payloadSchema(document, alerts).properties as Record<
        string,
        { items: { properties: Record<string, Record<string, unknown>>; required: string[] } }
      >
    ).alerts!.items;
    expect(item.required).toEqual(expect.arrayContaining(['alertTypeId', 'category', 'name', 'isEnabled', 'parameters']));
    expect(item.properties.parameters).toMatchObject({ type: ['object', 'null'] });
    expect(item.required).not.toContain('dtsModified');
    expect(item.required).not.toContain('descriptionOn');
  });

  it('are held to the rule: a schema or an answer that leaves one out is caught', () => {
    const shape = fieldsOf(['alerts', 'success'], { nested: { alerts: listOf(ALERT) } });
    const schema = {
      type: 'object',
      properties: {
        alerts: {
          type: 'array',
          items: {
            type: 'object',
            properties: {
              alertTypeId: {},
              category: {},
              name: {},
              isEnabled: {},
              parameters: {},
              descriptionOn: {},
              descriptionOff: {},
              dtsModified: {},
            },
            required: ['alertTypeId', 'category', 'name', 'isEnabled'],
          },
        },
        success: {},
      },
      required: ['alerts', 'success'],
    };
    expect(documentedSchemaProblems(document, shape, schema)).toEqual([
      '(payload).alerts[].parameters: documented without being optional, not required',
    ]);
    const answer = {
      success: true,
      alerts: [
        {
          alertTypeId: 'alert1',
          category: 'general',
          name: 'Card payment',
          isEnabled: true,
          parameters: null,
          dtsModified: '2026-01-01T00:00:00.000Z',
        },
        { alertTypeId: 'alert2', category: 'general', name: 'x', isEnabled: false },
      ],
    };
    expect(missingDocumentedFields(shape, answer)).toEqual(['alerts[1].parameters']);
    const headers = new Headers({ 'content-type': 'application/json', 'x-request-id': 'r1' });
    expect(checker.check('POST', '/alerts', 200, headers, JSON.stringify({ ...answer, alerts: [answer.alerts[0]] }))).toBe('/alerts');
    expect(() => checker.check('POST', '/alerts', 200, headers, JSON.stringify(answer))).toThrow(/parameters/);
  });
});

describe('request validation', () => {
  const validator = new RequestValidator(ROUTES);
  const route = (method: string, p: string) => ROUTES.find((r) => r.method === method && r.paths.includes(p))!;
  const check = (r: Route, body: unknown, params: Record<string, string> = {}, query: Record<string, string> = {}) =>
    validator.check(r, { params, query: new URLSearchParams(query), body });
  const refusal = (r: Route, body: unknown) => {
    try {
      check(r, body);
    } catch (error) {
      if (error instanceof RouteInputError) return { code: error.code, field: error.field, message: error.message };
      throw error;
    }
    return null;
  };

  it("accepts every route's example, and each example with any optional property null", () => {
    for (const r of ROUTES) {
      if (!r.example) continue;
      expect(() => check(r, r.example!.body, r.example!.params, r.example!.query), `${r.method} ${r.paths[0]}`).not.toThrow();
      const schema = r.requestSchema as { type?: string; properties?: Record<string, unknown>; required?: string[] } | undefined;
      if (schema?.type !== 'object' || !schema.properties) continue;
      for (const name of Object.keys(schema.properties).filter((n) => !(schema.required ?? []).includes(n))) {
        expect(refusal(r, { ...(r.example.body as object), [name]: null }), `${r.paths[0]} ${name}: null`).toBeNull();
      }
    }
  });

  it('accepts what the graph accepts: null filters, empty date bounds, a deletion by id, a channel property left null', () => {
    expect(
      refusal(route('POST', '/payment-link/payment/refund-list'), { status: null, paymentType: null, dateCreateFrom: '', dueDateTo: '' }),
    ).toBeNull();
    expect(refusal(route('POST', '/user'), { deletedAddresses: [{ SvcUserAddressId: 'adr_1' }] })).toBeNull();
    expect(
      refusal(route('POST', '/user'), {
        newAddresses: [
          { addressLine1: '1 Main St', city: 'Springfield', state: 'IL', postalCode: '62701', countryCode: null, country: 'US' },
        ],
      }),
    ).toBeNull();
    expect(refusal(route('PUT', '/token'), { channel: 'internet', userName: null, password: 'x' })).toBeNull();
    expect(refusal(route('POST', '/ibis/financial/retrieve'), { reference: 'FUNDREF1000', svcFundsId: null, arn: null })).toBeNull();
  });

  it('refuses with the code the graph gives, naming the field by its path', () => {
    expect(refusal(route('PUT', '/token'), { channel: 5 })).toMatchObject({ code: 'BAD_REQUEST', field: 'channel' });
    expect(refusal(route('PUT', '/token'), { channel: 'fax' })).toMatchObject({ code: 'INVALID_CHANNEL', field: 'channel' });
    expect(refusal(route('POST', '/user'), { deletedAddresses: [{ city: 'x' }] })).toMatchObject({
      // eslint-disable-next-line @typescript-eslint/no-unsafe-assignment -- vitest types its asymmetric matchers as any.
      field: expect.stringMatching(/^deletedAddresses\[0\]/),
    });
    expect(refusal(route('POST', '/user/change-password'), { oldPassword: 'x', newPassword: 'abcdefg1!' })).toMatchObject({
      code: 'VALIDATION_FAILED',
      message: 'newPassword must contain at least one uppercase letter.',
    });
    expect(refusal(route('POST', '/akepa/list'), { customerId: 'c', numberOfRecords: 1001 })).toMatchObject({
      code: 'VALIDATION_FAILED',
      field: 'numberOfRecords',
    });
    expect(refusal(route('POST', '/auth/get-token'), { user: { login: 'a'.repeat(37), password: 'x' } })).toMatchObject({
      message: 'user.login must be 1-36 characters long.',
    });
  });
});

describe('the contract check', () => {
  const headers = (type = 'application/json') => new Headers({ 'content-type': type, 'x-request-id': 'r1' });
  const card = {
    _id: 'c',
    SvcCardId: 'c',
    SvcAccountId: 'a',
    SvcUserId: 'u',
    typeId: 't',
    cardIdBO: null,
    accountIdBO: null,
    backOfficeId: null,
    backOfficeName: null,
    status: 'active',
    isActive: true,
    isActivated: true,
    isClosed: false,
    num: '**** 1234',
    dtsOpened: null,
    dtsExpiry: null,
    dtsUpdated: null,
    dtsActivated: null,
    currency: 'USD',
    name_on_card: 'X',
    image: null,
    primaryUserSvcUserId: null,
    name: null,
    isMain: true,
  };
  const onoff = { success: true, status: 'active', isActive: true, card, userId: 'u' };

  it('accepts a response as documented', () => {
    expect(checker.check('POST', '/cards/c/on', 200, headers(), JSON.stringify(onoff))).toBe('/cards/{SvcCardId}/{onoff}');
  });

  it('refuses a member the document does not have, a missing one and a wrong type', () => {
    expect(() => checker.check('POST', '/cards/c/on', 200, headers(), JSON.stringify({ ...onoff, secret: 'x' }))).toThrow(/does not match/);
    expect(() =>
      checker.check('POST', '/cards/c/on', 200, headers(), JSON.stringify({ ...onoff, card: { ...card, num: undefined } })),
    ).toThrow(/does not match/);
    expect(() => checker.check('POST', '/cards/c/on', 200, headers(), JSON.stringify({ ...onoff, isActive: 'yes' }))).toThrow(
      /does not match/,
    );
  });

  it('refuses an undocumented status, content type or missing request id', () => {
    expect(() => checker.check('POST', '/cards/c/on', 418, headers(), '{}')).toThrow(/not documented/);
    expect(() => checker.check('POST', '/cards/c/on', 200, headers('text/plain'), JSON.stringify(onoff))).toThrow(/content type/);
    expect(() =>
      checker.check('POST', '/cards/c/on', 200, new Headers({ 'content-type': 'application/json' }), JSON.stringify(onoff)),
    ).toThrow(/x-request-id/);
  });

  it("holds error bodies to the API's error envelope", () => {
    expect(() =>
      checker.check(
        'POST',
        '/cards/c/on',
        404,
        headers(),
        JSON.stringify({ success: false, error: { code: 'NOT_FOUND', message: 'No card.' }, requestId: 'r1' }),
      ),
    ).not.toThrow();
    expect(() =>
      checker.check('POST', '/akepa/list', 400, headers(), JSON.stringify({ code: '0', message: 'x', requestId: 'r1' })),
    ).toThrow(/does not match/);
    expect(() =>
      checker.check(
        'GET',
        '/nowhere',
        404,
        headers(),
        JSON.stringify({ error: { code: 'NOT_FOUND', message: 'No route.' }, requestId: 'r1' }),
      ),
    ).not.toThrow();
    expect(() => checker.check('GET', '/nowhere', 200, headers(), '{}')).toThrow(/404 was expected/);
    const notAllowed = JSON.stringify({ error: { code: 'METHOD_NOT_ALLOWED', message: 'x' }, requestId: 'r1' });
    expect(() =>
      checker.check('GET', '/cards/c', 405, new Headers({ 'content-type': 'application/json', allow: 'POST' }), notAllowed),
    ).not.toThrow();
    expect(() => checker.check('GET', '/cards/c', 405, headers(), notAllowed)).toThrow(/Allow/);
  });

  it('holds an error code to the codes the route answers with that status', () => {
    const error = (code: string) => JSON.stringify({ success: false, error: { code, message: 'x' }, requestId: 'r1' });
    expect(() => checker.check('POST', '/cards/c/on', 404, headers(), error('NOT_FOUND'))).not.toThrow();
    expect(() => checker.check('POST', '/cards/c/on', 400, headers(), error('NOT_FOUND'))).toThrow(/does not match/);
    expect(() => checker.check('PUT', '/token', 404, headers(), error('REQUIRED_ELEMENT_MISSING'))).not.toThrow();
    expect(() => checker.check('PUT', '/token', 400, headers(), error('REQUIRED_ELEMENT_MISSING'))).toThrow(/does not match/);
    const aggregator = (code: string) => JSON.stringify({ code, message: 'x', requestId: 'r1' });
    expect(() => checker.check('POST', '/auth/get-token', 401, headers(), aggregator('unauthorized'))).not.toThrow();
    expect(() => checker.check('POST', '/auth/get-token', 401, headers(), aggregator('UNAUTHENTICATED'))).toThrow(/does not match/);
  });
});

describe('the request collection', () => {
  const collection = buildPostmanCollection('http://localhost:8080');
  const items = collection.item.flatMap((group) => group.item);

  it('has a request for every operation of the document, with its credential header', () => {
    const documented = Object.entries(document.paths).flatMap(([p, item]) =>
      Object.keys(item).map((method) => `${method.toUpperCase()} ${p}`),
    );
    expect(items.map((item) => `${item.request.method} ${openApiPath(item.name.split(' ')[1]!)}`).sort()).toEqual(documented.sort());
    for (const item of items) {
      const route = ROUTES.find((r) => r.paths.includes(item.name.split(' ')[1]!) && r.method === item.request.method)!;
      if (route.credential) expect(item.request.header.map((h) => h.key)).toContain(route.credential);
      expect(item.request.url.raw.startsWith('{{baseUrl}}/')).toBe(true);
    }
  });
});
