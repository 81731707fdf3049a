import { mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import {
  buildClientSchema,
  buildSchema,
  getIntrospectionQuery,
  getNamedType,
  isEnumType,
  isInputObjectType,
  isLeafType,
  isListType,
  isNonNullType,
  isObjectType,
  Kind,
  parse,
  type GraphQLField,
  type GraphQLInputType,
  type GraphQLOutputType,
  type IntrospectionQuery,
} from 'graphql';
import type { Document } from 'mongodb';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { DEMO } from '../../platform/domain/demo.js';
import { ErrorCode } from '../../platform/contracts/errors.js';
import { signJwt } from '../../platform/security/jwt.js';
import { ownValue } from '../../platform/contracts/own.js';
import { hashPassword, newOpaqueToken, sha256 } from '../../platform/security/secrets.js';
import { startWebhookReceiver } from '../../scripts/lib/webhook-receiver.js';
import { aggregatorCode } from '../../rest-adapter/src/envelopes.js';
import { loadOperation } from '../../rest-adapter/src/operations.js';
import { ROUTES, type Route } from '../../rest-adapter/src/routes/index.js';
import { routeErrorCodes, statusOfCode } from '../../rest-adapter/src/routes/route.js';
import type { SessionSubject } from '../../subgraphs/user/src/auth/sessions.js';
import { authCollections } from '../../subgraphs/user/src/auth/datasource.js';
import { startTestStack, type GraphQLBody, type TestStack } from '../support/harness.js';

/*
 * The authorization matrix: every REST route of the route table and every root field of the
 * composed API schema, called with no credential, an unknown, expired or revoked one, the wrong
 * kind of credential, and another party's valid credential on the victims' object ids. Each must
 * be refused with the documented status, and no answer may carry the victims' data.
 *
 * Parties. Victims: the demo user Dana (user A), the demo aggregator (aggregator A) with its
 * merchant `demo_merchant` (merchant A), its customers, applications and links. Attackers, all
 * with valid credentials of their own: a second end user who onboarded (user B), an open prospect,
 * a second aggregator (aggregator B) with its merchant (merchant B) and a customer of merchant B's
 * link, and a second merchant of aggregator A (merchant A2: another merchant, same aggregator).
 */

/** Who a credential speaks for. */
type PrincipalKind = 'user' | 'prospect' | 'aggregator' | 'merchant' | 'customer' | 'service';
/** Who may call a route or a root field: nobody needs a credential, or these kinds of principal. */
type Access = 'public' | readonly PrincipalKind[];

const CARD_PROCESSOR_KEY = 'card-processor-key-for-the-access-rights-tests';
/** A service key of an internal service that no operation names (the statement generator's logins). */
const STATEMENTS_KEY = 'statements-key-for-the-access-rights-tests-0001';
const CHAT_KEY = 'chat-key-for-the-access-rights-tests-000000001';
const OPERATOR_KEY = 'operator-key-for-the-access-rights-tests-0000001';
const READER_KEY = 'reader-key-for-the-access-rights-tests-00000001';
const UNSCOPED_KEY = 'unscoped-key-for-the-access-rights-tests-000001';

/**
 * The service keys of the matrix and what each may do: its scope as configured (SERVICE_KEY_SCOPES),
 * or for a key it does not name, the documented default (the fields reserved for the key's name,
 * no channel, no user). `users` are the users it may open sessions for.
 */
const SERVICE_KEY_ROWS: ReadonlyArray<{
  name: string;
  key: string;
  configured: boolean;
  channels: readonly string[];
  users: 'victim' | 'any' | 'none';
  fields: readonly string[];
}> = [
  { name: 'card-processor', key: CARD_PROCESSOR_KEY, configured: false, channels: [], users: 'none', fields: ['authorizeCardMessage'] },
  {
    name: 'operator',
    key: OPERATOR_KEY,
    configured: false,
    channels: [],
    users: 'none',
    fields: [
      'setUserActive',
      'auditLog',
      'restrictionRules',
      'evaluateTransaction',
      'setRestriction',
      'removeRestriction',
      'placeProceduralRestriction',
      'liftProceduralRestriction',
    ],
  },
  { name: 'statements', key: STATEMENTS_KEY, configured: true, channels: ['statementGenerator'], users: 'victim', fields: [] },
  { name: 'chat', key: CHAT_KEY, configured: true, channels: ['chat'], users: 'any', fields: [] },
  { name: 'reader', key: READER_KEY, configured: true, channels: [], users: 'none', fields: ['node', 'transactionTypes'] },
  { name: 'unscoped', key: UNSCOPED_KEY, configured: false, channels: [], users: 'none', fields: [] },
];
const SERVICE_KEY_SCOPES = JSON.stringify(
  Object.fromEntries(
    SERVICE_KEY_ROWS.filter((row) => row.configured).map((row) => [
      row.name,
      { channels: row.channels, users: row.users === 'any' ? '*' : row.users === 'victim' ? [DEMO.userId] : [], fields: row.fields },
    ]),
  ),
);
const PNG = Buffer.concat([Buffer.from([0x89, 0x50, 0x4e, 0x47, 0x0d, 0x0a, 0x1a, 0x0a]), Buffer.alloc(64, 1)]);
const OPS_PASSWORD = 'Ops#Pass2026';
const RIVAL_PASSWORD = 'Rival#Pass2026';
/** Error codes that refuse a caller of the wrong kind: not signed in as what the operation needs, or not allowed to call it. */
const REFUSALS: readonly string[] = [ErrorCode.UNAUTHENTICATED, ErrorCode.FORBIDDEN];

// ---------------------------------------------------------------------------------------------
// Who may call what, from the route table and the schema
// ---------------------------------------------------------------------------------------------

/** The kinds of principal a route's credential header carries. */
function routeAccess(route: Route): Access {
  switch (route.credential) {
    case null:
      return 'public';
    case 'token':
      // End users and prospects (onboarding) both send `token`.
      return ['user', 'prospect'];
    case 'x-svc-token':
      return ['aggregator'];
    case 'x-svc-jwtoken':
      // The OpenAPI security scheme: a merchant JWT on /public/merchant routes, a customer JWT on /public/customer routes.
      if (route.paths.every((p) => p.startsWith('/public/merchant/'))) return ['merchant'];
      if (route.paths.every((p) => p.startsWith('/public/customer/'))) return ['customer'];
      throw new Error(`${route.method} ${route.paths[0]}: x-svc-jwtoken on a path that is neither /public/merchant nor /public/customer`);
  }
}

/** The root fields an operation file selects. */
function rootFieldsOf(operation: string): string[] {
  return parse(loadOperation(operation)).definitions.flatMap((definition) =>
    definition.kind === Kind.OPERATION_DEFINITION
      ? definition.selectionSet.selections.flatMap((s) => (s.kind === Kind.FIELD && !s.name.value.startsWith('__') ? [s.name.value] : []))
      : [],
  );
}

/**
 * Root fields whose callers no REST route tells (or tells only in part). The schema carries no
 * authorization directives: which principal a field serves is written only in its SDL
 * description and enforced in its resolver, so it cannot be derived from data. Every other root
 * field takes the credential of the REST routes whose operations select it; a root field in
 * neither is unclassified and fails the test below, so new surface cannot slip past the matrix.
 */
const FIELD_ACCESS: Readonly<Record<string, Access>> = {
  // Platform reference data (the transaction types and what each allows), the same for everyone;
  // `GET /restrictions` shows it next to the user's own restrictions.
  transactionTypes: 'public',
  // Any caller: the record's own subgraph resolves it under its own access rule, null to those who
  // may not see it (test/gateway/apollo-client.e2e.ts asks as another user and as nobody).
  node: 'public',
  // GraphQL only: end users (internal services act for any user where the description says so).
  me: ['user'],
  alerts: ['user'],
  card: ['user', 'service'],
  evaluateTransaction: ['user', 'service'],
  createBeneficiary: ['user'],
  deleteBeneficiary: ['user'],
  recordIouTransaction: ['user'],
  acceptIouTransaction: ['user'],
  cancelIouTransaction: ['user'],
  // GraphQL only: aggregators.
  aggregatorViewer: ['aggregator'],
  cardWebhookDeliveries: ['aggregator'],
  merchants: ['aggregator'],
  application: ['aggregator'],
  saveMerchant: ['aggregator'],
  configureWebhook: ['aggregator'],
  resendCardWebhookDelivery: ['aggregator'],
  enableCardWebhook: ['aggregator'],
  enableMerchantWebhook: ['aggregator'],
  // GraphQL only, shared: a card message is its user's and its program's aggregator's; payments and deliveries their aggregator's and merchant's.
  cardAuthorization: ['user', 'aggregator', 'service'],
  // A window of them, counted or paged: the program's aggregator's or the cards' user's; nobody reads every program's.
  cardAuthorizationSummary: ['user', 'aggregator'],
  cardAuthorizationsConnection: ['user', 'aggregator'],
  achPayment: ['aggregator', 'merchant'],
  delivery: ['aggregator', 'merchant', 'service'],
  deliveries: ['aggregator', 'merchant'],
  resendDelivery: ['aggregator', 'merchant'],
  paymentLinks: ['merchant'],
  paymentLinkStatusCounts: ['aggregator', 'merchant'],
  // Relay connections beside the offset lists: each serves the callers of its offset list.
  paymentLinksConnection: ['merchant'],
  refundsConnection: ['aggregator'],
  deliveriesConnection: ['aggregator', 'merchant'],
  cardWebhookDeliveriesConnection: ['aggregator'],
  applicationsConnection: ['aggregator'],
  achReturnRatesConnection: ['aggregator'],
  // REST serves only the customer side (`GET /public/customer/payment`); merchants and aggregators read links too.
  paymentLink: ['customer', 'merchant', 'aggregator'],
  // Internal services only.
  user: ['service'],
  authorizeCardMessage: ['service'],
  recordAchSettlement: ['service'],
  recordAchDebit: ['service'],
  recordAchReturn: ['service'],
  recordCardTransaction: ['service'],
  recordCardTransactions: ['service'],
  holdCardFunds: ['service'],
  releaseCardHolds: ['service'],
  openCheckingAccount: ['service'],
  applyAchActivity: ['service'],
  appendAuditRecords: ['service'],
  auditLog: ['service'],
  setUserActive: ['service'],
  // Operators change the rules of transactions; card authorization's read model exports them.
  setRestriction: ['service'],
  removeRestriction: ['service'],
  placeProceduralRestriction: ['service'],
  liftProceduralRestriction: ['service'],
  restrictionRules: ['service'],
};

const SUPERGRAPH = buildSchema(readFileSync(new URL('../../schema/supergraph.graphql', import.meta.url), 'utf8'), { assumeValidSDL: true });
const ROOT_FIELDS: Array<{ root: 'query' | 'mutation'; field: GraphQLField<unknown, unknown> }> = [
  ...Object.values(SUPERGRAPH.getQueryType()!.getFields()).map((field) => ({ root: 'query' as const, field })),
  ...Object.values(SUPERGRAPH.getMutationType()!.getFields()).map((field) => ({ root: 'mutation' as const, field })),
];

/** Each root field's access: the REST routes' credentials, unless FIELD_ACCESS says it; undefined when neither. */
const REST_ACCESS = new Map<string, Set<Access>>();
for (const route of ROUTES) {
  for (const name of rootFieldsOf(route.operation)) REST_ACCESS.set(name, (REST_ACCESS.get(name) ?? new Set()).add(routeAccess(route)));
}
function fieldAccess(name: string): Access | undefined {
  const hand = ownValue(FIELD_ACCESS, name);
  if (hand) return hand;
  const fromRoutes = [...(REST_ACCESS.get(name) ?? [])];
  if (fromRoutes.length === 0) return undefined;
  if (fromRoutes.includes('public')) return 'public';
  return [...new Set(fromRoutes.flatMap((access) => (access === 'public' ? [] : [...access])))];
}

const PROTECTED_ROUTES = ROUTES.filter((route) => route.credential !== null);
const PROTECTED_FIELDS = ROOT_FIELDS.filter(({ field }) => fieldAccess(field.name) !== 'public' && fieldAccess(field.name) !== undefined);
const routeLabel = (route: Route) => `${route.method} ${route.paths[0]}`;

// ---------------------------------------------------------------------------------------------
// Requests
// ---------------------------------------------------------------------------------------------

interface RestRequest {
  method: Route['method'];
  path: string;
  body?: unknown;
  multipart: boolean;
}
interface Answer {
  status: number;
  text: string;
  json: unknown;
}

/** Runs `fn` over `items`, `size` at a time: the whole stack shares two cores. */
async function inBatches<T, R>(items: readonly T[], size: number, fn: (item: T) => Promise<R>): Promise<R[]> {
  const results: R[] = [];
  for (let i = 0; i < items.length; i += size) results.push(...(await Promise.all(items.slice(i, i + size).map(fn))));
  return results;
}

/** The error code of a REST error body (either envelope). */
function restErrorCode(json: unknown): string | undefined {
  if (json === null || typeof json !== 'object') return undefined;
  const body = json as { code?: unknown; error?: { code?: unknown } };
  const code = body.error?.code ?? body.code;
  return typeof code === 'string' ? code : undefined;
}

/** Every string in a JSON-like value. */
function stringsIn(value: unknown): string[] {
  if (typeof value === 'string') return [value];
  if (Array.isArray(value)) return value.flatMap(stringsIn);
  if (value !== null && typeof value === 'object') return Object.values(value).flatMap(stringsIn);
  return [];
}

// ---------------------------------------------------------------------------------------------
// GraphQL operations made from the schema
// ---------------------------------------------------------------------------------------------

/** Values for arguments and input fields that are not another party's id, by name (or `field.path`). */
const SAMPLES: Readonly<Record<string, unknown>> = {
  code: '123456',
  onoff: 'off',
  currency: 'USD',
  amount: 10,
  txnType: 'USA',
  sourceAccountType: 'checking',
  address: '1 Main St, Springfield, IL 62701',
  url: 'https://hooks.example.com/cards',
  defaultStrategy: 'decline',
  messageType: '0220',
  stan: '654321',
  rrn: 'RRN654321000',
  direction: 'debit',
  kind: 'debit',
  entryDate: '2026-01-05',
  eventId: 'evt_matrix_1',
  returnCode: 'R01',
  alertTypeId: 'alert1',
  paymentType: 'card',
  documentType: 'passport',
  view: 'front',
  oldPassword: 'Not#ThePassword1',
  newPassword: 'New#Pass2099',
  deviceTag: 'matrix-device-1',
  socketId: 'socket_1',
  preSegment: 'retail',
  name: 'Matrix probe',
  contentType: 'image/png',
  contentBase64: PNG.toString('base64'),
  imageBase64: PNG.toString('base64'),
  'recordIouTransaction.input.kind': 'loan',
  'initializeCustomer.input.type': 'individual',
  'uploadMerchantLogo.input.type': 'light',
  // Within the 7 days a window of card messages may reach back, so that the probe reads the window.
  'cardAuthorizationSummary.since': new Date(Date.now() - 60 * 60 * 1000).toISOString(),
  'cardAuthorizationsConnection.since': new Date(Date.now() - 60 * 60 * 1000).toISOString(),
  'addCondorCard.input.cardAttributes': {
    productID: 'debit_classic',
    nameOnCard: 'MATRIX PROBE',
    designId: 'blue',
    addressType: 'home',
    issueType: 'virtual',
  },
};

/** A value of a scalar or enum type when nothing names one. */
function fallbackValue(type: GraphQLInputType): unknown {
  const named = getNamedType(type);
  if (isEnumType(named)) return named.getValues()[0]?.value;
  switch (named.name) {
    case 'Int':
      return 1;
    case 'Float':
      return 1;
    case 'Boolean':
      return false;
    case 'Date':
      return '2026-01-05';
    case 'DateTime':
      return '2026-01-05T00:00:00.000Z';
    case 'JSONObject':
      return {};
    default:
      return 'matrix_probe';
  }
}

/**
 * The value of one argument or input field: a victim's id where its name (or path) names one,
 * else a sample by name, else for required ones a value of its type; optional ones nothing names
 * are left out, and so are optional input objects that carry no id.
 */
function inputValue(pathName: string, name: string, type: GraphQLInputType, victimIds: ReadonlyMap<string, string>): unknown {
  const required = isNonNullType(type);
  const inner = required ? type.ofType : type;
  const named = getNamedType(type);
  const victim = victimIds.get(pathName) ?? victimIds.get(name);
  const sample = ownValue(SAMPLES, pathName) ?? ownValue(SAMPLES, name);
  const wrap = (value: unknown) => (isListType(inner) ? [value] : value);
  if (victim !== undefined && !isInputObjectType(named)) return wrap(victim);
  if (sample !== undefined) return isListType(inner) && !Array.isArray(sample) ? [sample] : sample;
  if (isInputObjectType(named)) {
    const object: Record<string, unknown> = {};
    for (const field of Object.values(named.getFields())) {
      const value = inputValue(`${pathName}.${field.name}`, field.name, field.type, victimIds);
      if (value !== undefined) object[field.name] = value;
    }
    const ids = new Set(victimIds.values());
    if (!required && !stringsIn(object).some((value) => ids.has(value))) return undefined;
    return wrap(object);
  }
  return required ? wrap(fallbackValue(type)) : undefined;
}

/** A selection of a type's fields that take no required argument, two levels deep. */
function selectionOf(type: GraphQLOutputType, depth = 0): string {
  const named = getNamedType(type);
  if (isLeafType(named)) return '';
  if (!isObjectType(named)) return '{ __typename }';
  const parts = Object.values(named.getFields()).flatMap((field) => {
    if (field.args.some((arg) => isNonNullType(arg.type) && arg.defaultValue === undefined)) return [];
    const inner = getNamedType(field.type);
    if (isLeafType(inner)) return [field.name];
    return depth < 1 ? [`${field.name} ${selectionOf(field.type, depth + 1)}`] : [];
  });
  return `{ __typename ${parts.join(' ')} }`;
}

interface Probe {
  query: string;
  variables: Record<string, unknown>;
  /** Whether an argument carries one of the victims' ids. */
  hasVictimId: boolean;
}

/** One operation that calls `field` with the victims' ids wherever an argument takes an id. */
function probeOf(
  root: 'query' | 'mutation',
  field: GraphQLField<unknown, unknown>,
  victimIds: ReadonlyMap<string, string>,
  victimIdSet: ReadonlySet<string>,
): Probe {
  const definitions: string[] = [];
  const args: string[] = [];
  const variables: Record<string, unknown> = {};
  for (const arg of field.args) {
    const value = inputValue(`${field.name}.${arg.name}`, arg.name, arg.type, victimIds);
    if (value === undefined) continue;
    definitions.push(`$${arg.name}: ${String(arg.type)}`);
    args.push(`${arg.name}: $${arg.name}`);
    variables[arg.name] = value;
  }
  const query = `${root} Probe${definitions.length ? `(${definitions.join(', ')})` : ''} { ${field.name}${args.length ? `(${args.join(', ')})` : ''} ${selectionOf(field.type)} }`;
  return { query, variables, hasVictimId: stringsIn(variables).some((s) => victimIdSet.has(s)) };
}

// ---------------------------------------------------------------------------------------------
// The matrix
// ---------------------------------------------------------------------------------------------

describe('access rights (a matrix) over every REST route and every GraphQL root field', () => {
  let stack: TestStack;
  let receiver: Awaited<ReturnType<typeof startWebhookReceiver>>;
  const outboxDir = mkdtempSync(path.join(tmpdir(), 'access-rights-outbox-'));

  /** The victims' object ids by argument, property or parameter name, or by `field.argument.path` where one name means different objects. */
  const victimIds = new Map<string, string>();
  /** Every id of the victims' objects (a request that carries one asks for another party's object). */
  const victimIdSet = new Set<string>();
  /** Values that identify the victims or their objects; none may reach another party. */
  const victimValues: string[] = [];
  /** The victims' objects as stored after the set-up; the matrix must leave them unchanged. */
  let victimState = '';

  /** Credentials of the victims (A) and attackers (B); the valid session tokens are minted per call so that a wrongly accepted logout spoils nothing else. */
  const credentials = {
    userA: '',
    userAExpired: '',
    userARevoked: '',
    aggregatorA: '',
    aggregatorAExpired: '',
    aggregatorARevoked: '',
    aggregatorAConfined: '',
    merchantA: '',
    merchantAExpired: '',
    merchantA2: '',
    customerA: '',
    customerAExpired: '',
    forgedJwt: '',
    merchantB: '',
    customerB: '',
    userBId: '',
    prospectBId: '',
    prospectBDeviceTag: '',
  };
  const RIVAL_AGGREGATOR = 'rival_aggregator';
  const RIVAL_LOGIN = 'rival_ops';

  /** A live session, issued as the user subgraph issues them. */
  const mint = (subject: SessionSubject): Promise<string> => stack.issueToken(subject);
  const userA = () => mint({ kind: 'user', SvcUserId: DEMO.userId, channel: 'internet' });
  const aggregatorA = () =>
    mint({ kind: 'aggregator', svcAggregatorId: DEMO.aggregatorId, login: DEMO.aggregatorLogin, tokenType: 'base' });
  const userB = () => mint({ kind: 'user', SvcUserId: credentials.userBId, channel: 'internet' });
  const prospectB = () => mint({ kind: 'prospect', prospectId: credentials.prospectBId, deviceTag: credentials.prospectBDeviceTag });
  const aggregatorB = () => mint({ kind: 'aggregator', svcAggregatorId: RIVAL_AGGREGATOR, login: RIVAL_LOGIN, tokenType: 'base' });

  /** The victims' values found in `text` that the request did not itself send. */
  const leaked = (text: string, sent: string): string[] =>
    victimValues.filter((value) => {
      const needle = value.length >= 8 ? value : JSON.stringify(value);
      return text.includes(needle) && !sent.includes(value);
    });

  const send = async (request: RestRequest, headers: Record<string, string>): Promise<Answer> => {
    if (request.multipart) {
      const form = new FormData();
      form.append('file', new Blob([PNG], { type: 'image/png' }), 'probe.png');
      const response = await stack.restFetch(request.path, { method: request.method, headers, body: form });
      const text = await response.text();
      return { status: response.status, text, json: text ? (JSON.parse(text) as unknown) : null };
    }
    const response = await stack.rest<unknown>(request.method, request.path, { headers, body: request.body });
    return { status: response.status, text: JSON.stringify(response.body), json: response.body };
  };

  /**
   * The route's request made of its documented example, with the victims' ids wherever a
   * parameter or property names one (the examples are made of the demo data, so most already
   * are). A route that creates an object keeps its example's new id: that id is the caller's own.
   */
  const requestOf = (route: Route): RestRequest => {
    const creates = rootFieldsOf(route.operation).some((name) => /^(initialize|create)[A-Z]/.test(name));
    const substitute = (value: unknown, key?: string): unknown => {
      if (typeof value === 'string') return victimIdSet.has(value) || key === undefined || creates ? value : (victimIds.get(key) ?? value);
      if (Array.isArray(value)) return value.map((item) => substitute(item, key));
      if (value !== null && typeof value === 'object')
        return Object.fromEntries(Object.entries(value).map(([k, v]) => [k, substitute(v, k)]));
      return value;
    };
    const params = Object.fromEntries(
      Object.entries(route.example?.params ?? {}).map(([k, v]) => [k, victimIdSet.has(v) ? v : (victimIds.get(k) ?? v)]),
    );
    let pathname = route.paths[0]!.replace(/:(\w+)/g, (_match, name: string) =>
      encodeURIComponent(params[name] ?? victimIds.get(name) ?? 'matrix_probe'),
    );
    const query = new URLSearchParams(route.example?.query ?? {}).toString();
    if (query) pathname += `?${query}`;
    const body =
      route.body === 'object' || route.body === 'array' ? substitute(route.example?.body ?? (route.body === 'array' ? [] : {})) : undefined;
    return { method: route.method, path: pathname, body, multipart: route.body === 'multipart' };
  };

  beforeAll(async () => {
    stack = await startTestStack({
      SERVICE_KEYS: SERVICE_KEY_ROWS.map((row) => `${row.name}=${row.key}`).join(','),
      SERVICE_KEY_SCOPES,
      OUTBOX_DIR: outboxDir,
    });
    receiver = await startWebhookReceiver(DEMO.webhook.secret);
    const userDb = stack.mongo.db('user');
    const { aggregators, aggregatorUsers, sessions } = authCollections(userDb);
    await stack.mongo
      .db('cards')
      .collection('webhookConfigs')
      .updateOne({ _id: DEMO.aggregatorId as never }, { $set: { url: receiver.url } });
    const ok = <T>(what: string, answer: { status: number; body: T }): T => {
      if (answer.status !== 200) throw new Error(`set-up: ${what} answered ${answer.status} ${JSON.stringify(answer.body)}`);
      return answer.body;
    };
    type Tokens = { data: { token: string; tokens: Array<{ token: string; type: string }> } };
    const getToken = (login: string, password: string) =>
      stack.rest<Tokens>('POST', '/auth/get-token', { body: { user: { login, password } } }).then((r) => ok(`get-token ${login}`, r).data);
    const merchantJwt = (aggregatorToken: string, svcMerchantId: string) =>
      stack
        .rest<{ data: { token: string } }>('POST', '/payment-link/merchant/get-token', {
          headers: { 'x-svc-token': aggregatorToken },
          body: { svcMerchantId },
        })
        .then((r) => ok(`merchant token ${svcMerchantId}`, r).data.token);
    const graph = async (query: string, variables: Record<string, unknown>, headers: Record<string, string>) => {
      const answer = await stack.graphql(query, variables, headers);
      if (answer.body.errors) throw new Error(`set-up: ${query}: ${JSON.stringify(answer.body.errors)}`);
      return answer.body.data!;
    };
    const expire = (token: string) =>
      sessions.updateOne({ tokenHash: sha256(token) }, { $set: { dtsExpiry: new Date(Date.now() - 1000) } });
    const sendLink = async (jwt: string, payerName: string, email: string) => {
      const created = ok(
        'create link',
        await stack.rest<{ data: { svcTransactionId: string } }>('POST', '/public/merchant/payment/create', {
          headers: { 'x-svc-jwtoken': jwt },
          body: { amount: 12, currency: 'USD', payerName, fields: [{ index: 0, code: 'email', label: 'Email', value: email }] },
        }),
      ).data.svcTransactionId;
      ok(
        'send link',
        await stack.rest('POST', '/public/merchant/payment/send', {
          headers: { 'x-svc-jwtoken': jwt },
          body: { svcTransactionId: created },
        }),
      );
      return created;
    };
    const waitFor = async (what: string, find: () => Promise<Document | null>): Promise<Document> => {
      for (let i = 0; i < 100; i += 1) {
        const found = await find();
        if (found) return found;
        await new Promise((resolve) => setTimeout(resolve, 100));
      }
      throw new Error(`set-up: ${what} did not appear`);
    };

    // User A: a live token, an expired one (its session's expiry moved into the past) and a revoked one (logged out).
    credentials.userA = await stack.loginDemo();
    credentials.userAExpired = await stack.loginDemo();
    await expire(credentials.userAExpired);
    credentials.userARevoked = await stack.loginDemo();
    ok('logout', await stack.rest('DELETE', '/token', { headers: { token: credentials.userARevoked } }));
    // A change with an undo, so that the undo route has a real undo of the victim's.
    const modified = ok(
      'beneficiary change',
      await stack.rest<{ undo: { id: string } }>('POST', '/beneficiary/demo_beneficiary_1', {
        headers: { token: credentials.userA },
        body: { isFavourite: true },
      }),
    );

    // Aggregator A: a live base token, an expired one, and a second user of the same aggregator whose
    // tokens its password change revoked (the aggregator's way of logging out), then a confined token of it.
    const aggregatorTokens = await getToken(DEMO.aggregatorLogin, DEMO.aggregatorPassword);
    credentials.aggregatorA = aggregatorTokens.token;
    credentials.aggregatorAExpired = (await getToken(DEMO.aggregatorLogin, DEMO.aggregatorPassword)).token;
    await expire(credentials.aggregatorAExpired);
    const now = new Date();
    await aggregatorUsers.insertOne({
      _id: 'demo_aggregator_ops',
      login: 'demo_aggregator_ops',
      svcAggregatorId: DEMO.aggregatorId,
      passwordHash: await hashPassword(OPS_PASSWORD),
      dtsCreated: now,
      dtsPasswordChanged: now,
    });
    credentials.aggregatorARevoked = (await getToken('demo_aggregator_ops', OPS_PASSWORD)).token;
    ok(
      'change password',
      await stack.rest('POST', '/user/change-password', {
        headers: { 'x-svc-token': credentials.aggregatorARevoked },
        body: { oldPassword: OPS_PASSWORD, newPassword: 'Ops#Pass2027' },
      }),
    );
    credentials.aggregatorAConfined = (await getToken('demo_aggregator_ops', 'Ops#Pass2027')).tokens.find(
      (t) => t.type === 'confined',
    )!.token;

    // Merchant A's JWT (and an expired and a forged one), a second merchant of aggregator A, a customer of merchant A's sent link.
    credentials.merchantA = await merchantJwt(credentials.aggregatorA, DEMO.merchantId);
    credentials.merchantAExpired = await signJwt(
      { typ: 'merchant', sub: DEMO.merchantId, agg: DEMO.aggregatorId },
      stack.config.jwtSecret,
      Date.now() - 3601_000,
    );
    credentials.forgedJwt = await signJwt(
      { typ: 'merchant', sub: DEMO.merchantId, agg: DEMO.aggregatorId },
      'not-the-secret-not-the-secret-not-the-secret',
    );
    await graph(
      'mutation ($input: MerchantInput!) { saveMerchant(input: $input) { webhookSecret } }',
      { input: { svcMerchantId: 'sibling_shop', name: 'Sibling Scooters' } },
      { 'x-svc-token': credentials.aggregatorA },
    );
    credentials.merchantA2 = await merchantJwt(credentials.aggregatorA, 'sibling_shop');
    credentials.customerA = ok(
      'customer token',
      await stack.rest<{ data: { token: string } }>('POST', '/public/customer/payment/link', { body: { link: DEMO.sentLinkCode } }),
    ).data.token;
    credentials.customerAExpired = await signJwt(
      { typ: 'customer', sub: 'demo_link_2', agg: DEMO.aggregatorId, mer: DEMO.merchantId },
      stack.config.jwtSecret,
      Date.now() - 3601_000,
    );

    // The victims' objects that the demo data lacks: a sent link's delivery, a KYC document, a decided card message and its webhook delivery.
    const victimLink = await sendLink(credentials.merchantA, 'Victor Victim', 'victor.victim@example.com');
    const linkDelivery = await waitFor('the link delivery', () =>
      stack.mongo.db('payments').collection('deliveries').findOne({ svcMerchantId: DEMO.merchantId, status: 'delivered' }),
    );
    const document = ok(
      'generate document',
      await stack.rest<{ data: { documentId: string } }>('POST', '/akepa/document/generate', {
        headers: { 'x-svc-token': credentials.aggregatorA },
        body: { customerId: 'demo_customer_2', entityId: 'demo_customer_2', documentType: 'passport' },
      }),
    ).data.documentId;
    const decided = (await graph(
      'mutation ($input: CardMessageInput!) { authorizeCardMessage(input: $input) { messageId approved } }',
      {
        input: {
          messageType: '0220',
          svcCardId: DEMO.cardIds[0],
          amount: 25,
          currency: 'USD',
          merchantName: 'Corner Grocery',
          mcc: '5411',
          stan: '424242',
          rrn: 'RRN000424242',
        },
      },
      { 'x-service-key': CARD_PROCESSOR_KEY },
    )) as { authorizeCardMessage: { messageId: string; approved: boolean } };
    const cardDelivery = await waitFor('the card webhook delivery', () =>
      stack.mongo.db('cards').collection('deliveries').findOne({ svcAggregatorId: DEMO.aggregatorId, status: 'delivered' }),
    );
    const achPayment = (await stack.mongo.db('payments').collection('achPayments').findOne({ svcAggregatorId: DEMO.aggregatorId }))!;

    // Aggregator B with its merchant, and a customer of merchant B's sent link.
    await aggregators.insertOne({ _id: RIVAL_AGGREGATOR, svcAggregatorId: RIVAL_AGGREGATOR, name: 'Rival Payments Co', dtsCreated: now });
    await aggregatorUsers.insertOne({
      _id: RIVAL_LOGIN,
      login: RIVAL_LOGIN,
      svcAggregatorId: RIVAL_AGGREGATOR,
      passwordHash: await hashPassword(RIVAL_PASSWORD),
      dtsCreated: now,
      dtsPasswordChanged: now,
    });
    const rivalToken = (await getToken(RIVAL_LOGIN, RIVAL_PASSWORD)).token;
    await graph(
      'mutation ($input: MerchantInput!) { saveMerchant(input: $input) { webhookSecret } }',
      { input: { svcMerchantId: 'rival_shop', name: 'Rival Cycles' } },
      { 'x-svc-token': rivalToken },
    );
    credentials.merchantB = await merchantJwt(rivalToken, 'rival_shop');
    const rivalLink = await sendLink(credentials.merchantB, 'Rita Rival', 'rita@rival.example');
    const rivalCode = (await stack.mongo
      .db('payments')
      .collection('paymentLinks')
      .findOne({ _id: rivalLink as never }))!.link as string;
    credentials.customerB = ok(
      'customer token B',
      await stack.rest<{ data: { token: string } }>('POST', '/public/customer/payment/link', { body: { link: rivalCode } }),
    ).data.token;

    // User B onboards as any end user does; a second prospect stays open.
    const prospect = ok(
      'prospect data',
      await stack.rest<{ token: string }>('POST', '/prospect/data', {
        body: {
          deviceTag: 'rival-device-1',
          preSegment: 'retail',
          firstName: 'Mallory',
          lastName: 'Rival',
          email: 'mallory@rival.example',
        },
      }),
    );
    credentials.userBId = ok(
      'registration',
      await stack.rest<{ SvcUserId: string }>('POST', '/prospect/registration', {
        headers: { token: prospect.token },
        body: { deviceTag: 'rival-device-1', preSegment: 'retail', deviceData: { model: 'Rival phone' } },
      }),
    ).SvcUserId;
    credentials.prospectBId = ok(
      'prospect data',
      await stack.rest<{ prospectId: string }>('POST', '/prospect/data', {
        body: { deviceTag: 'rival-prospect-1', preSegment: 'retail', firstName: 'Rory' },
      }),
    ).prospectId;
    credentials.prospectBDeviceTag = 'rival-prospect-1';

    // The victims' ids by the names that take them.
    const ids: Record<string, string> = {
      SvcCardId: DEMO.cardIds[0],
      svcCardId: DEMO.testCardId,
      SvcAccountId: DEMO.accountId,
      transactionId: 'demo_txn_02',
      SvcBeneficiaryId: 'demo_beneficiary_1',
      undoId: modified.undo.id,
      SvcUserId: DEMO.userId,
      otherSvcUserId: DEMO.userId,
      IOUTransactionId: 'demo_iou_3',
      messageId: decided.authorizeCardMessage.messageId,
      deliveryId: String(linkDelivery._id),
      'resendCardWebhookDelivery.deliveryId': String(cardDelivery._id),
      svcTransactionId: 'demo_link_1',
      'refundPaymentLink.input.svcTransactionId': 'demo_link_6',
      'achPayment.svcTransactionId': String(achPayment._id),
      'recordAchSettlement.svcTransactionId': String(achPayment._id),
      'recordAchReturn.input.svcTransactionId': String(achPayment._id),
      svcMerchantId: DEMO.merchantId,
      customerId: 'demo_customer_2',
      'addCondorCard.input.customerId': DEMO.userId,
      entityId: 'demo_customer_2',
      applicationId: 'demo_application_2',
      documentId: document,
      'fundsTransactions.input.reference': 'FUNDREF1000',
      svcAggregatorId: DEMO.aggregatorId,
      // The victim user by global id: what a service key asked of node(id:) before keys were scoped.
      'node.id': `User:${DEMO.userId}`,
    };
    for (const [name, id] of Object.entries(ids)) victimIds.set(name, id);

    // Everything that identifies the victims, read from their stored objects.
    const db = (name: 'user' | 'cards' | 'payments' | 'compliance') => stack.mongo.db(name);
    const docs = (database: 'user' | 'cards' | 'payments' | 'compliance', collection: string, filter: Document) =>
      db(database).collection(collection).find(filter).toArray();
    const add = (...values: unknown[]) => {
      for (const value of values) if (typeof value === 'string' && value.length >= 3) victimValues.push(value);
    };
    const addIds = (...values: unknown[]) => {
      for (const value of values)
        if (typeof value === 'string') {
          victimIdSet.add(value);
          add(value);
        }
    };
    for (const user of await docs('user', 'users', { _id: { $in: [DEMO.userId, DEMO.friendUserId] } })) {
      add(user.firstName, user.lastName, user.email, user.mobile, user.phoneNumber, user.referralCode, user.dosDob);
      for (const address of (user.addresses ?? []) as Array<Record<string, unknown>>)
        add(address.addressLine1, address.addressLine2, address.SvcUserAddressId);
    }
    addIds(DEMO.userId);
    for (const card of await docs('cards', 'cards', { $or: [{ SvcUserId: DEMO.userId }, { svcAggregatorId: DEMO.aggregatorId }] })) {
      addIds(card._id);
      add(card.num, card.name_on_card, card.cardIdBO, card.name);
    }
    addIds(DEMO.accountId);
    add('Everyday checking', '**** 3307');
    for (const t of await docs('payments', 'transactions', { SvcAccountId: DEMO.accountId })) {
      addIds(t._id);
      add(t.reference, t.transactionIdBO);
    }
    for (const b of await docs('payments', 'beneficiaries', { SvcUserId: DEMO.userId })) {
      addIds(b._id);
      add(b.name, b.paypalId, b.bankName, b.narrativeDebit, b.accountNumberLastFour ? `**** ${String(b.accountNumberLastFour)}` : null);
    }
    for (const iou of await docs('payments', 'iouTransactions', {
      $or: [{ borrowerSvcUserId: DEMO.userId }, { lenderSvcUserId: DEMO.userId }],
    })) {
      addIds(iou._id, iou.IOUAccountId);
      add(iou.narrative);
    }
    for (const r of await docs('compliance', 'restrictions', { SvcUserId: DEMO.userId })) add(r.restrictionName, r.description);
    // The victim merchant's (merchant A2, of the same aggregator, is one of the other parties).
    for (const m of await docs('payments', 'merchants', { _id: DEMO.merchantId })) {
      addIds(m._id);
      add(m.name, m.webhookSecret);
    }
    for (const link of await docs('payments', 'paymentLinks', { svcAggregatorId: DEMO.aggregatorId })) {
      addIds(link._id, link.link);
      add(
        link.payerName,
        link.invoiceNumber,
        link.svcMerchantRef,
        link.description,
        ...stringsIn(link.fields).filter((v) => v.includes('@')),
      );
    }
    for (const refund of await docs('payments', 'refunds', { svcAggregatorId: DEMO.aggregatorId })) addIds(refund._id);
    for (const funds of await docs('payments', 'fundsTransactions', { svcAggregatorId: DEMO.aggregatorId })) {
      addIds(funds._id, funds.reference);
      add(funds.boTransId, funds.arn);
    }
    for (const delivery of [linkDelivery, cardDelivery]) addIds(String(delivery._id));
    addIds(String(achPayment._id), decided.authorizeCardMessage.messageId, victimLink, modified.undo.id, document);
    for (const customer of await docs('compliance', 'customers', { svcAggregatorId: DEMO.aggregatorId })) {
      addIds(customer.customerId, customer.applicationId);
      const person = customer.person as { firstName: string; lastName: string } | null;
      add(customer.reference, person?.firstName);
    }
    add('Demo aggregator', DEMO.webhook.secret, DEMO.merchantWebhookSecret, receiver.url);
    add(credentials.userA, credentials.aggregatorA, credentials.merchantA, credentials.customerA);
    victimState = await snapshotVictims();
  });

  afterAll(async () => {
    // eslint-disable-next-line @typescript-eslint/no-unnecessary-condition -- beforeAll may have failed before assigning it.
    await stack?.stop();
    // eslint-disable-next-line @typescript-eslint/no-unnecessary-condition -- beforeAll may have failed before assigning it.
    await receiver?.close();
    rmSync(outboxDir, { recursive: true, force: true });
  });

  /** The victims' objects as stored: what a wrongly accepted change would alter. */
  async function snapshotVictims(): Promise<string> {
    const read = async (database: 'user' | 'cards' | 'payments' | 'compliance', collection: string, filter: Document) =>
      (await stack.mongo.db(database).collection(collection).find(filter).toArray()).sort((a, b) =>
        String(a._id).localeCompare(String(b._id)),
      );
    const seededLinks = Array.from({ length: 8 }, (_, i) => `demo_link_${i + 1}`);
    return JSON.stringify({
      users: await read('user', 'users', { _id: { $in: [DEMO.userId, DEMO.friendUserId] } }),
      credentials: await read('user', 'credentials', { _id: DEMO.userName }),
      aggregatorUsers: await read('user', 'aggregatorUsers', { svcAggregatorId: DEMO.aggregatorId }),
      cards: await read('cards', 'cards', { _id: { $in: [...DEMO.cardIds, DEMO.testCardId] } }),
      webhookConfigs: await read('cards', 'webhookConfigs', { _id: DEMO.aggregatorId }),
      accounts: await read('payments', 'accounts', { SvcUserId: DEMO.userId }),
      transactions: await read('payments', 'transactions', { SvcAccountId: DEMO.accountId }),
      beneficiaries: await read('payments', 'beneficiaries', { SvcUserId: DEMO.userId }),
      undos: await read('payments', 'beneficiaryUndos', { SvcUserId: DEMO.userId }),
      ious: await read('payments', 'iouTransactions', { _id: { $in: ['demo_iou_1', 'demo_iou_2', 'demo_iou_3'] } }),
      merchants: await read('payments', 'merchants', { _id: DEMO.merchantId }),
      links: await read('payments', 'paymentLinks', { _id: { $in: seededLinks } }),
      refunds: await read('payments', 'refunds', { svcAggregatorId: DEMO.aggregatorId }),
      customers: await read('compliance', 'customers', { svcAggregatorId: DEMO.aggregatorId }),
      applications: await read('compliance', 'applications', { svcAggregatorId: DEMO.aggregatorId }),
      documents: await read('compliance', 'kycDocuments', { svcAggregatorId: DEMO.aggregatorId }),
      restrictions: await read('compliance', 'restrictions', { SvcUserId: DEMO.userId }),
    });
  }

  it("classifies every route and every root field of the gateway's API schema, so that no surface escapes the matrix", async () => {
    const introspection = await stack.graphql<IntrospectionQuery>(getIntrospectionQuery(), {});
    const api = buildClientSchema(introspection.body.data!);
    const served = [
      ...Object.keys(api.getQueryType()!.getFields()).map((n) => `query ${n}`),
      ...Object.keys(api.getMutationType()!.getFields()).map((n) => `mutation ${n}`),
    ].sort();
    expect(served).toEqual(ROOT_FIELDS.map(({ root, field }) => `${root} ${field.name}`).sort());
    expect(ROOT_FIELDS.filter(({ field }) => fieldAccess(field.name) === undefined).map(({ field }) => field.name)).toEqual([]);
    // Hand-classified fields exist, so the list cannot rot silently.
    expect(Object.keys(FIELD_ACCESS).filter((name) => !ROOT_FIELDS.some(({ field }) => field.name === name))).toEqual([]);
    for (const route of ROUTES) expect(() => routeAccess(route)).not.toThrow();
    // Public routes are those whose route entry names no credential; their root fields are public too.
    const publicRoutes = ROUTES.filter((route) => route.credential === null);
    expect(publicRoutes.length + PROTECTED_ROUTES.length).toBe(ROUTES.length);
    for (const route of publicRoutes) for (const name of rootFieldsOf(route.operation)) expect(fieldAccess(name), name).toBe('public');
  });

  // -------------------------------------------------------------------------------------------
  // REST
  // -------------------------------------------------------------------------------------------

  interface RestCase {
    name: string;
    headers: () => Promise<Record<string, string>>;
    /** The status (and code) the route documents, or `scoped`: the caller's own call, which must show none of the victims' data. */
    expected: { status: number; code: string } | { status: number } | 'scoped';
    /** The caller is another party: its answer must carry none of the victims' data. */
    checkLeaks: boolean;
  }

  /** The variants of one route: no credential, unknown, expired, revoked, the wrong kind, a confined token where it changes state, another party's. */
  function restCases(route: Route, request: RestRequest): RestCase[] {
    const header = route.credential!;
    const [kind] = routeAccess(route) as readonly PrincipalKind[];
    const missing = { status: statusOfCode(route, ErrorCode.TOKEN_MISSING), code: ErrorCode.TOKEN_MISSING };
    const unauthenticated = { status: statusOfCode(route, ErrorCode.UNAUTHENTICATED), code: ErrorCode.UNAUTHENTICATED };
    const value =
      (v: string | (() => Promise<string>), name = header) =>
      async () => ({ [name]: typeof v === 'string' ? v : await v() });
    const cases: RestCase[] = [
      { name: 'no credential', headers: async () => ({}), expected: missing, checkLeaks: true },
      {
        name: 'an unknown credential',
        headers: value(header === 'x-svc-jwtoken' ? 'not-a-jwt' : newOpaqueToken()),
        expected: unauthenticated,
        checkLeaks: true,
      },
    ];
    const victimRequest = stringsIn([request.path, request.body]).some(
      (s) => victimIdSet.has(s) || [...victimIdSet].some((id) => s.includes(`/${encodeURIComponent(id)}`)),
    );
    const crossParty = victimRequest
      ? routeErrorCodes(route).includes(ErrorCode.NOT_FOUND)
        ? { status: 404, code: ErrorCode.NOT_FOUND }
        : { status: 200 }
      : 'scoped';
    if (header === 'token') {
      cases.push(
        { name: 'an expired end-user token', headers: value(credentials.userAExpired), expected: unauthenticated, checkLeaks: true },
        {
          name: 'a revoked end-user token (logged out)',
          headers: value(credentials.userARevoked),
          expected: unauthenticated,
          checkLeaks: true,
        },
        { name: 'an aggregator token in the token header', headers: value(aggregatorA), expected: unauthenticated, checkLeaks: false },
        { name: 'a merchant JWT in the token header', headers: value(credentials.merchantA), expected: unauthenticated, checkLeaks: false },
        {
          name: 'an aggregator token in its own x-svc-token header',
          headers: value(aggregatorA, 'x-svc-token'),
          expected: missing,
          checkLeaks: false,
        },
        { name: "another end user's token", headers: value(userB), expected: crossParty, checkLeaks: true },
      );
    } else if (header === 'x-svc-token') {
      cases.push(
        {
          name: 'an expired aggregator token',
          headers: value(credentials.aggregatorAExpired),
          expected: unauthenticated,
          checkLeaks: true,
        },
        {
          name: 'a revoked aggregator token (its password was changed)',
          headers: value(credentials.aggregatorARevoked),
          expected: unauthenticated,
          checkLeaks: true,
        },
        { name: 'an end-user token in the x-svc-token header', headers: value(userA), expected: unauthenticated, checkLeaks: false },
        {
          name: 'a merchant JWT in the x-svc-token header',
          headers: value(credentials.merchantA),
          expected: unauthenticated,
          checkLeaks: false,
        },
        { name: 'an end-user token in its own token header', headers: value(userA, 'token'), expected: missing, checkLeaks: false },
        { name: "another aggregator's token", headers: value(aggregatorB), expected: crossParty, checkLeaks: true },
      );
      if (/^\s*mutation\b/m.test(loadOperation(route.operation))) {
        cases.push({
          name: 'a confined (read-only) token on a route that changes state',
          headers: value(credentials.aggregatorAConfined),
          expected: { status: statusOfCode(route, ErrorCode.FORBIDDEN), code: ErrorCode.FORBIDDEN },
          checkLeaks: false,
        });
      }
    } else {
      cases.push(
        { name: 'a forged JWT', headers: value(credentials.forgedJwt), expected: unauthenticated, checkLeaks: true },
        {
          name: 'an aggregator token in the x-svc-jwtoken header',
          headers: value(aggregatorA),
          expected: unauthenticated,
          checkLeaks: false,
        },
        { name: 'an end-user token in the x-svc-jwtoken header', headers: value(userA), expected: unauthenticated, checkLeaks: false },
        {
          name: 'an aggregator token in its own x-svc-token header',
          headers: value(aggregatorA, 'x-svc-token'),
          expected: missing,
          checkLeaks: false,
        },
      );
      if (kind === 'merchant') {
        cases.push(
          { name: 'an expired merchant JWT', headers: value(credentials.merchantAExpired), expected: unauthenticated, checkLeaks: true },
          {
            name: 'a customer JWT where a merchant JWT is needed',
            headers: value(credentials.customerA),
            expected: unauthenticated,
            checkLeaks: false,
          },
          {
            name: "the JWT of another aggregator's merchant",
            headers: value(credentials.merchantB),
            expected: crossParty,
            checkLeaks: true,
          },
          {
            name: 'the JWT of another merchant of the same aggregator',
            headers: value(credentials.merchantA2),
            expected: crossParty,
            checkLeaks: true,
          },
        );
      } else {
        cases.push(
          { name: 'an expired customer JWT', headers: value(credentials.customerAExpired), expected: unauthenticated, checkLeaks: true },
          {
            name: 'a merchant JWT where a customer JWT is needed',
            headers: value(credentials.merchantA),
            expected: unauthenticated,
            checkLeaks: false,
          },
          {
            name: "the customer JWT of another merchant's link",
            headers: value(credentials.customerB),
            expected: crossParty,
            checkLeaks: true,
          },
        );
      }
    }
    return cases;
  }

  describe('REST routes', () => {
    it.each(PROTECTED_ROUTES.map((route) => [routeLabel(route), route] as const))(
      "refuses %s without a valid credential of its kind with the documented status, and shows no other party the victims' data",
      async (_label, route) => {
        const request = requestOf(route);
        const sent = JSON.stringify(request);
        const failures = await inBatches(restCases(route, request), 6, async (variant) => {
          const answer = await send(request, await variant.headers());
          const problems: string[] = [];
          if (variant.expected !== 'scoped') {
            if (answer.status !== variant.expected.status) problems.push(`status ${answer.status}, expected ${variant.expected.status}`);
            if ('code' in variant.expected) {
              const want = route.api === 'aggregator' ? aggregatorCode(variant.expected.code) : variant.expected.code;
              if (restErrorCode(answer.json) !== want) problems.push(`code ${restErrorCode(answer.json)}, expected ${want}`);
            }
          }
          if (variant.checkLeaks) {
            const found = leaked(answer.text, sent);
            if (found.length) problems.push(`victim data in the body: ${found.join(', ')}`);
          }
          return problems.length ? `${variant.name}: ${problems.join('; ')} — ${answer.text.slice(0, 300)}` : null;
        });
        expect(failures.filter((f) => f !== null)).toEqual([]);
      },
    );
  });

  // -------------------------------------------------------------------------------------------
  // GraphQL
  // -------------------------------------------------------------------------------------------

  interface GraphAnswer {
    status: number;
    body: GraphQLBody;
    text: string;
  }
  interface GraphCase {
    name: string;
    headers: () => Promise<Record<string, string>>;
    probe: Probe;
    /** What is wrong with the answer, if anything. */
    check: (answer: GraphAnswer) => string[];
  }

  describe('GraphQL root fields', () => {
    it.each(PROTECTED_FIELDS.map(({ root, field }) => [`${root} ${field.name}`, root, field] as const))(
      "refuses %s to callers without a valid credential of its kind, and answers another party without the victims' data",
      async (_label, root, field) => {
        const access = fieldAccess(field.name) as readonly PrincipalKind[];
        const serviceOnly = access.every((k) => k === 'service');
        const probe = probeOf(root, field, victimIds, victimIdSet);
        // The same call on ids that name nothing: a refusal must not depend on whether the object exists.
        const unknownIds = probeOf(root, field, new Map([...victimIds.keys()].map((name) => [name, 'matrix_no_such_object'])), victimIdSet);
        const sent = JSON.stringify(probe.variables);
        const header = (name: string, v: string | (() => Promise<string>)) => async () => ({
          [name]: typeof v === 'string' ? v : await v(),
        });
        const refusal = (answer: GraphAnswer, codes: readonly string[]): string[] => {
          const code = answer.body.errors?.[0]?.extensions?.code;
          const value = answer.body.data?.[field.name] ?? null;
          if (!code || !codes.includes(code)) return [`code ${code ?? '(none)'}, expected ${codes.join(' or ')}`];
          return value === null ? [] : [`data ${JSON.stringify(value).slice(0, 200)}`];
        };
        const noLeak = (answer: GraphAnswer) => leaked(answer.text, sent).map((v) => `victim data: ${v}`);
        // Invalid credentials are refused by the gateway with 401, before any field runs.
        const invalid = (name: string, headers: () => Promise<Record<string, string>>): GraphCase => ({
          name,
          headers,
          probe,
          check: (answer) => [
            ...(answer.status === 401 ? [] : [`HTTP ${answer.status}, expected 401`]),
            ...refusal(answer, [ErrorCode.UNAUTHENTICATED]),
            ...noLeak(answer),
          ],
        });
        // Anonymous callers: UNAUTHENTICATED (an internal service's operation refuses everyone else as FORBIDDEN).
        const anonymous = (name: string, withProbe: Probe): GraphCase => ({
          name,
          headers: async () => ({}),
          probe: withProbe,
          check: (answer) => [...refusal(answer, serviceOnly ? REFUSALS : [ErrorCode.UNAUTHENTICATED]), ...noLeak(answer)],
        });
        /** A valid credential: refused when the field does not serve its kind; another party's must see none of the victims' data. */
        const valid = (name: string, ofItsKind: boolean, headers: () => Promise<Record<string, string>>, attacker: boolean): GraphCase => ({
          name,
          headers,
          probe,
          check: (answer) => {
            const problems: string[] = [];
            if (!ofItsKind) problems.push(...refusal(answer, REFUSALS).map((p) => `the wrong kind of credential was not refused: ${p}`));
            else if (probe.hasVictimId && !isNonNullType(field.type) && !answer.body.errors && answer.body.data?.[field.name] !== null) {
              problems.push(`another party's object answered: ${JSON.stringify(answer.body.data?.[field.name]).slice(0, 200)}`);
            }
            return attacker ? [...problems, ...noLeak(answer)] : problems;
          },
        });

        const cases: GraphCase[] = [anonymous('no credential', probe)];
        if (probe.hasVictimId) cases.push(anonymous('no credential, on ids that name nothing', unknownIds));
        // Expired, revoked and forged credentials of the kinds the field serves (unknown ones: see the REST routes).
        if (access.includes('user') || access.includes('prospect')) {
          cases.push(
            invalid('an expired end-user token', header('token', credentials.userAExpired)),
            invalid('a revoked end-user token', header('token', credentials.userARevoked)),
          );
        }
        if (access.includes('aggregator'))
          cases.push(
            invalid('an expired aggregator token', header('x-svc-token', credentials.aggregatorAExpired)),
            invalid('a revoked aggregator token', header('x-svc-token', credentials.aggregatorARevoked)),
          );
        if (access.includes('merchant'))
          cases.push(invalid('an expired merchant JWT', header('x-svc-jwtoken', credentials.merchantAExpired)));
        if (access.includes('customer'))
          cases.push(invalid('an expired customer JWT', header('x-svc-jwtoken', credentials.customerAExpired)));
        if (access.includes('merchant') || access.includes('customer'))
          cases.push(invalid('a forged JWT', header('x-svc-jwtoken', credentials.forgedJwt)));
        if (serviceOnly)
          cases.push(
            invalid('an unknown service key', header('x-service-key', newOpaqueToken())),
            valid('the service key of another internal service', false, header('x-service-key', STATEMENTS_KEY), false),
          );
        // The victims' own valid credentials of every kind the field does not serve.
        const victims: Array<[string, PrincipalKind, () => Promise<Record<string, string>>]> = [
          ["the victim end user's token", 'user', header('token', userA)],
          ["the victim aggregator's token", 'aggregator', header('x-svc-token', aggregatorA)],
          ["the victim merchant's JWT", 'merchant', header('x-svc-jwtoken', credentials.merchantA)],
          ["the victim merchant's customer JWT", 'customer', header('x-svc-jwtoken', credentials.customerA)],
        ];
        for (const [name, kind, headers] of victims) if (!access.includes(kind)) cases.push(valid(name, false, headers, false));
        // Other parties' valid credentials of the kinds the field serves, on the victims' ids (a kind it does not
        // serve is refused above with the victim's own credential of that kind; a prospect has no such twin).
        const others: Array<[string, PrincipalKind, () => Promise<Record<string, string>>]> = [
          ["another end user's token", 'user', header('token', userB)],
          ["a prospect's token", 'prospect', header('token', prospectB)],
          ["another aggregator's token", 'aggregator', header('x-svc-token', aggregatorB)],
          ["another aggregator's merchant's JWT", 'merchant', header('x-svc-jwtoken', credentials.merchantB)],
          ["another merchant's JWT (same aggregator)", 'merchant', header('x-svc-jwtoken', credentials.merchantA2)],
          ["another link's customer JWT", 'customer', header('x-svc-jwtoken', credentials.customerB)],
        ];
        for (const [name, kind, headers] of others)
          if (kind === 'prospect' || access.includes(kind)) cases.push(valid(name, access.includes(kind), headers, true));

        const failures = await inBatches(cases, 8, async (variant) => {
          const response = await stack.graphql(variant.probe.query, variant.probe.variables, await variant.headers());
          const answer: GraphAnswer = { status: response.status, body: response.body, text: JSON.stringify(response.body) };
          const problems = variant.check(answer);
          return problems.length ? `${variant.name}: ${problems.join('; ')} — ${answer.text.slice(0, 300)}` : null;
        });
        expect(failures.filter((f) => f !== null)).toEqual([]);
      },
    );
  });

  describe('service keys: each does what its scope says, nothing else', () => {
    const SERVICE_CHANNEL_LOGINS: ReadonlyArray<{ channel: string; body: Record<string, string>; user: 'victim' | 'other' }> = [
      { channel: 'statementGenerator', body: { channel: 'statementGenerator', userId: DEMO.userId }, user: 'victim' },
      { channel: 'statementGenerator', body: { channel: 'statementGenerator', userId: DEMO.friendUserId }, user: 'other' },
      { channel: 'dicBuilder', body: { channel: 'dicBuilder', userId: DEMO.userId }, user: 'victim' },
      { channel: 'dicBuilder', body: { channel: 'dicBuilder', userId: DEMO.friendUserId }, user: 'other' },
      {
        channel: 'chat',
        body: { channel: 'chat', transport: DEMO.chat.transport, transportUserId: DEMO.chat.transportUserId },
        user: 'victim',
      },
      { channel: 'internet', body: { channel: 'internet', userName: DEMO.userName, password: DEMO.password }, user: 'victim' },
    ];

    it.each(SERVICE_KEY_ROWS.map((row) => [row.name, row] as const))(
      'the %s key, against every login channel, root field and route',
      async (_name, row) => {
        const headers = { 'x-service-key': row.key };
        const failures: string[] = [];

        // Logins (PUT /token): a session only over its channels and for its users; every other is the channel's refusal, 404 CHANNEL_NOT_PERMITTED.
        for (const login of SERVICE_CHANNEL_LOGINS) {
          const allowed =
            row.channels.includes(login.channel) && (row.users === 'any' || (row.users === 'victim' && login.user === 'victim'));
          const answer = await send({ method: 'PUT', path: '/token', body: login.body, multipart: false }, headers);
          const label = `login ${login.channel} for the ${login.user} user`;
          if (allowed && answer.status !== 200) failures.push(`${label}: ${answer.status}, expected 200 — ${answer.text.slice(0, 200)}`);
          if (
            !allowed &&
            (answer.status !== 404 || restErrorCode(answer.json) !== ErrorCode.CHANNEL_NOT_PERMITTED || answer.text.includes('"token"'))
          ) {
            failures.push(
              `${label}: ${answer.status} ${restErrorCode(answer.json) ?? ''}, expected 404 CHANNEL_NOT_PERMITTED — ${answer.text.slice(0, 200)}`,
            );
          }
        }

        // Root fields: outside the scope, 403 FORBIDDEN before any subgraph, nothing of the victims'; inside it, not refused
        // (called on ids that name nothing, so that the victims' objects stay as they are; node on the victim user, who answers null).
        const unknownIds = new Map([...victimIds.keys()].map((name) => [name, 'matrix_no_such_object']));
        const fieldFailures = await inBatches(
          ROOT_FIELDS.filter(({ field }) => field.name !== 'login'),
          8,
          async ({ root, field }) => {
            const inScope = row.fields.includes(field.name);
            const probe = probeOf(root, field, inScope && field.name !== 'node' ? unknownIds : victimIds, victimIdSet);
            const response = await stack.graphql(probe.query, probe.variables, headers);
            const text = JSON.stringify(response.body);
            const code = response.body.errors?.[0]?.extensions?.code;
            // A field in the scope answers what it is for (the operator's restriction rules name every user); node never a user.
            const problems =
              !inScope || field.name === 'node' ? leaked(text, JSON.stringify(probe.variables)).map((v) => `victim data: ${v}`) : [];
            if (
              inScope &&
              (response.status === 401 || response.status === 403 || code === ErrorCode.FORBIDDEN || code === ErrorCode.UNAUTHENTICATED)
            )
              problems.push(`in its scope, refused: ${response.status} ${code ?? ''}`);
            if (
              !inScope &&
              (response.status !== 403 || code !== ErrorCode.FORBIDDEN || (response.body.data?.[field.name] ?? null) !== null)
            )
              problems.push(`outside its scope: ${response.status} ${code ?? '(no error)'}, expected 403 FORBIDDEN`);
            if (inScope && field.name === 'node' && (response.body.data?.node ?? null) !== null)
              problems.push(`node answered another party's object: ${text.slice(0, 200)}`);
            return problems.length ? `${root} ${field.name}: ${problems.join('; ')} — ${text.slice(0, 200)}` : null;
          },
        );
        failures.push(...fieldFailures.filter((f) => f !== null));

        // REST routes: the adapter passes a service key on to PUT /token only; every protected route answers it as no credential.
        const routeFailures = await inBatches(PROTECTED_ROUTES, 8, async (route) => {
          const request = requestOf(route);
          const answer = await send(request, headers);
          const want = route.api === 'aggregator' ? aggregatorCode(ErrorCode.TOKEN_MISSING) : ErrorCode.TOKEN_MISSING;
          const problems = leaked(answer.text, JSON.stringify(request)).map((v) => `victim data: ${v}`);
          if (answer.status !== statusOfCode(route, ErrorCode.TOKEN_MISSING) || restErrorCode(answer.json) !== want)
            problems.push(
              `${answer.status} ${restErrorCode(answer.json) ?? ''}, expected ${statusOfCode(route, ErrorCode.TOKEN_MISSING)} ${want}`,
            );
          return problems.length ? `${routeLabel(route)}: ${problems.join('; ')} — ${answer.text.slice(0, 200)}` : null;
        });
        failures.push(...routeFailures.filter((f) => f !== null));
        expect(failures).toEqual([]);
      },
    );
  });

  it('leaves every object of the victims as it was, and their own credentials working', async () => {
    expect(await snapshotVictims()).toBe(victimState);
    const me = await stack.graphql<{ me: { SvcUserId: string } }>('{ me { SvcUserId } }', {}, { token: credentials.userA });
    expect(me.body.data?.me.SvcUserId).toBe(DEMO.userId);
    const viewer = await stack.graphql<{ aggregatorViewer: { svcAggregatorId: string } }>(
      '{ aggregatorViewer { svcAggregatorId } }',
      {},
      { 'x-svc-token': credentials.aggregatorA },
    );
    expect(viewer.body.data?.aggregatorViewer.svcAggregatorId).toBe(DEMO.aggregatorId);
    const link = await stack.graphql<{ paymentLink: { status: string } }>(
      'query ($id: ID) { paymentLink(svcTransactionId: $id) { status } }',
      { id: 'demo_link_1' },
      { 'x-svc-jwtoken': credentials.merchantA },
    );
    expect(link.body.data?.paymentLink.status).toBe('Initiated');
  });
});
