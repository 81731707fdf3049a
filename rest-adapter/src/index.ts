import type { IncomingMessage, ServerResponse } from 'node:http';
import type { Config } from '../../platform/runtime/config.js';
import { ErrorCode } from '../../platform/contracts/errors.js';
import { HTTP_TRANSPORT, type Transport } from '../../platform/http/transport.js';
import { BodyTooLargeError, MAX_JSON_DEPTH, nestsDeeperThan, readBody, REQUEST_ID_HEADER, sendJson, startHttpService, type HttpService, type RequestScope } from '../../platform/http/server.js';
import type { Logger } from '../../platform/runtime/logger.js';
import { clientAddress, CLIENT_IP_HEADER, signClientIp } from '../../platform/security/signed-headers.js';
import { bodyRefusals } from '../../platform/telemetry/metrics.js';
import { buildPostmanCollection } from './contract/collection.js';
import { DecimalAnswers } from './contract/decimal-answers.js';
import { buildOpenApiDocument, supergraphSchema } from './contract/openapi.js';
import { REFERENCE_PAGE_HEADERS, referencePageFile } from './contract/reference-page.js';
import { RequestValidator } from './contract/request-validation.js';
import { aggregatorError, aggregatorSuccess, endUserError, type Api, type RouteError } from './envelopes.js';
import { readMultipart } from './multipart.js';
import { loadOperation } from './operations.js';
import { createRouter } from './router.js';
import { changesState, JSON_BODY_LIMIT_BYTES, ROUTES, RouteInputError, statusOfCode, type Route, type UploadedFile } from './routes/index.js';

interface GraphQLResponse {
  data?: Record<string, unknown> | null;
  errors?: Array<{ message: string; extensions?: { code?: string; field?: string; retryAfter?: number } }>;
}

/** The field a GraphQL variable-coercion message points at: `... at "input.userName"; ...` gives `userName`. */
function fieldOfCoercionError(message: string): string | undefined {
  const at = /at "([^"]+)"/.exec(message)?.[1];
  return at?.split('.').slice(1).join('.') || undefined;
}

/** How long the adapter waits for the gateway's answer, over HTTP or in this process (then 503). */
const GATEWAY_TIMEOUT_MS = 30_000;

/** A client requestId the aggregator spec allows echoing: 1-32 characters, no < or >, not only whitespace. */
const ECHOABLE_REQUEST_ID = /^(?!\s*$)[^<>]{1,32}$/;

function sendError(res: ServerResponse, api: Api, status: number, error: RouteError, requestId: string, retryAfterSeconds?: number): void {
  // Every 429 says when to try again; the graph knows when, else a minute.
  const headers = status === 429 ? { 'retry-after': String(retryAfterSeconds ?? 60) } : undefined;
  sendJson(res, status, api === 'aggregator' ? aggregatorError(error, requestId) : endUserError(error, requestId), headers);
}

/** The gateway's address answered something other than GraphQL's JSON: no gateway behind it is up. */
class GatewayUnavailable extends Error {
  constructor(readonly status: number) {
    super(`the gateway's address answered ${status} without a GraphQL body`);
  }
}

/**
 * Starts the REST adapter: each documented path of the two specs, mapped by the route table
 * onto a GraphQL operation sent to the gateway, with the documented envelope and statuses.
 */
export async function start(options: {
  config: Config;
  logger: Logger;
  port?: number;
  /** How it sends operations to the gateway; HTTP by default. */
  transport?: Transport;
}): Promise<HttpService> {
  const transport = options.transport ?? HTTP_TRANSPORT;
  const { config } = options;
  const logger = options.logger.child({ service: 'rest-adapter' });
  const operations = new Map(ROUTES.map((route) => [route.operation, loadOperation(route.operation)]));
  const match = createRouter(ROUTES);
  const validator = new RequestValidator(ROUTES);
  const decimals = new DecimalAnswers(supergraphSchema());
  // The contract is built once, from the same route table that serves the requests.
  // The demo passwords appear in the examples only where the demo data is loaded, outside production.
  const demoCredentials = config.seedDemo && config.nodeEnv !== 'production';
  const openApi = JSON.stringify(buildOpenApiDocument({ demoCredentials }));
  const collection = JSON.stringify(buildPostmanCollection(config.restPublicUrl, { demoCredentials }), null, 2);

  /** The adapter's own documents: the OpenAPI document, the reference page and the request collection. */
  async function serveContract(req: IncomingMessage, res: ServerResponse, pathname: string, scope: RequestScope): Promise<boolean> {
    if (req.method !== 'GET') return false;
    if (pathname === '/openapi.json' || pathname === '/postman-collection.json') scope.route = pathname;
    if (pathname === '/openapi.json') {
      res.writeHead(200, { 'content-type': 'application/json; charset=utf-8', 'cache-control': 'no-cache' }).end(openApi);
      return true;
    }
    if (pathname === '/postman-collection.json') {
      res.writeHead(200, { 'content-type': 'application/json; charset=utf-8', 'content-disposition': 'attachment; filename="banking-graph.postman_collection.json"' }).end(collection);
      return true;
    }
    if (pathname !== '/docs' && !pathname.startsWith('/docs/')) return false;
    const file = await referencePageFile(pathname.replace(/^\/docs\/?/, ''));
    if (!file) return false;
    scope.route = '/docs';
    res.writeHead(200, { 'content-type': file.type, 'cache-control': 'no-cache', ...REFERENCE_PAGE_HEADERS }).end(file.body);
    return true;
  }

  async function callGateway(route: Route, variables: Record<string, unknown>, req: IncomingMessage, scope: RequestScope): Promise<{ status: number; body: GraphQLResponse; replayed: boolean }> {
    const headers: Record<string, string> = { 'content-type': 'application/json', [REQUEST_ID_HEADER]: scope.requestId };
    const idempotencyKey = req.headers['idempotency-key'];
    if (typeof idempotencyKey === 'string' && changesState(route)) headers['idempotency-key'] = idempotencyKey;
    if (route.credential) headers[route.credential] = String(req.headers[route.credential]);
    for (const name of route.optionalHeaders ?? []) {
      const value = req.headers[name];
      // The names come from the route table, never from the client.
      // eslint-disable-next-line banking/no-table-lookup -- see above.
      if (typeof value === 'string') headers[name] = value;
    }
    const clientIp = clientAddress(req.headers, req.socket.remoteAddress, config.trustProxy);
    if (clientIp) headers[CLIENT_IP_HEADER] = signClientIp(clientIp, config.internalSecret);
    const request = { query: operations.get(route.operation)!, variables };
    const answer = await transport.post(config.gatewayUrl, headers, JSON.stringify(request), GATEWAY_TIMEOUT_MS);
    let body: GraphQLResponse;
    try {
      body = JSON.parse(answer.text) as GraphQLResponse;
    } catch {
      // A load balancer in front of the gateways answers 503 in HTML while none is up.
      throw new GatewayUnavailable(answer.status);
    }
    return { status: answer.status, body, replayed: answer.headers['idempotent-replayed'] === 'true' };
  }

  async function handle(req: IncomingMessage, res: ServerResponse, scope: RequestScope): Promise<void> {
    const url = new URL(req.url ?? '/', 'http://localhost');
    if (await serveContract(req, res, url.pathname, scope)) return;
    const found = match(req.method ?? 'GET', url.pathname);
    if (!found) {
      sendJson(res, 404, { error: { code: ErrorCode.NOT_FOUND, message: `No route for ${req.method} ${url.pathname}.` }, requestId: scope.requestId });
      return;
    }
    if ('allowed' in found) {
      sendJson(res, 405, { error: { code: 'METHOD_NOT_ALLOWED', message: `${url.pathname} answers ${found.allowed.join(', ')}.` }, requestId: scope.requestId }, { allow: found.allowed.join(', ') });
      return;
    }
    const { route, params, undecodable } = found;
    scope.route = found.template;
    try {
      await serveRoute(route, params, url, req, res, scope, undecodable);
    } catch (error) {
      // Anything unexpected still answers in the route's own error envelope, and says nothing of itself.
      scope.logger.error('unhandled error', { error });
      if (res.headersSent) res.end();
      else sendError(res, route.api, 500, { code: ErrorCode.INTERNAL, message: 'Internal server error.' }, scope.requestId);
    }
  }

  async function serveRoute(route: Route, params: Record<string, string>, url: URL, req: IncomingMessage, res: ServerResponse, scope: RequestScope, undecodable?: string): Promise<void> {
    let requestId = scope.requestId;
    const fail = (status: number, error: RouteError, retryAfterSeconds?: number) => sendError(res, route.api, status, error, requestId, retryAfterSeconds);

    if (route.credential && !req.headers[route.credential]) {
      fail(route.missingCredentialStatus ?? 401, { code: ErrorCode.TOKEN_MISSING, message: `The ${route.credential} header is required.`, field: route.credential });
      return;
    }
    let body: unknown = undefined;
    let files: UploadedFile[] = [];
    if (route.body === 'multipart') {
      try {
        ({ files } = await readMultipart(req, route.maxFileBytes ?? config.bodyLimitBytes));
      } catch (error) {
        if (!(error instanceof RouteInputError)) throw error;
        fail(statusOfCode(null, error.code, 400), { code: error.code, message: error.message, field: error.field });
        return;
      }
    } else if (route.body !== 'none') {
      let text: string;
      try {
        text = await readBody(req, Math.min(route.maxBodyBytes ?? JSON_BODY_LIMIT_BYTES, config.bodyLimitBytes));
      } catch (error) {
        if (error instanceof BodyTooLargeError) {
          bodyRefusals.inc({ service: 'rest-adapter' });
          // The rest of the body is not read: the connection is closed after the answer.
          res.setHeader('connection', 'close');
          fail(413, { code: ErrorCode.PAYLOAD_TOO_LARGE, message: error.message });
          return;
        }
        throw error;
      }
      try {
        body = JSON.parse(text);
      } catch {
        fail(400, { code: ErrorCode.BAD_REQUEST, message: 'The request body is not valid JSON.' });
        return;
      }
      if (nestsDeeperThan(body)) {
        fail(400, { code: ErrorCode.BAD_REQUEST, message: `The request body nests deeper than ${MAX_JSON_DEPTH} levels.` });
        return;
      }
      const isArray = Array.isArray(body);
      if (body === null || typeof body !== 'object' || isArray !== (route.body === 'array')) {
        fail(400, { code: ErrorCode.BAD_REQUEST, message: `The request body must be a JSON ${route.body}.` });
        return;
      }
      const echoed = route.requestIdOf?.(body);
      if (echoed !== undefined && ECHOABLE_REQUEST_ID.test(echoed)) requestId = echoed;
    }

    let variables: Record<string, unknown>;
    try {
      if (undecodable !== undefined) throw new RouteInputError(ErrorCode.BAD_REQUEST, `The path parameter ${undecodable} is not valid percent-encoding.`, undecodable);
      validator.check(route, { params, query: url.searchParams, body });
      variables = route.variables({ params, body, query: url.searchParams, files });
    } catch (error) {
      if (!(error instanceof RouteInputError)) throw error;
      fail(statusOfCode(route, error.code, 400), { code: error.code, message: error.message, field: error.field });
      return;
    }
    let result: { status: number; body: GraphQLResponse; replayed: boolean };
    try {
      result = await callGateway(route, variables, req, scope);
    } catch (error) {
      if (error instanceof GatewayUnavailable) scope.logger.warn('gateway unavailable', { status: error.status });
      else scope.logger.error('gateway call failed', { error });
      fail(statusOfCode(route, ErrorCode.UNAVAILABLE), { code: ErrorCode.UNAVAILABLE, message: 'The service is unavailable.' });
      return;
    }
    const first = result.body.errors?.[0];
    if (first) {
      const code = first.extensions?.code ?? ErrorCode.INTERNAL;
      const status = statusOfCode(route, code, result.status >= 400 ? result.status : 500);
      // A variable refused while coercing (a wrong type, a custom scalar) names its path in the message.
      const field = first.extensions?.field ?? fieldOfCoercionError(first.message);
      // eslint-disable-next-line @typescript-eslint/no-unsafe-enum-comparison -- code is the gateway's wire string, which ErrorCode's values are.
      const message = status >= 500 && code === ErrorCode.INTERNAL ? 'Internal server error.' : first.message;
      fail(status, { code: code === 'BAD_USER_INPUT' ? ErrorCode.BAD_REQUEST : code, message, field }, first.extensions?.retryAfter);
      return;
    }
    let payload: unknown;
    try {
      payload = route.respond(decimals.toNumbers(operations.get(route.operation)!, result.body.data ?? {}));
    } catch (error) {
      // A result the route cannot answer with (say, an object that is not there).
      if (!(error instanceof RouteInputError)) throw error;
      fail(statusOfCode(route, error.code, 400), { code: error.code, message: error.message, field: error.field });
      return;
    }
    if (route.responseType === 'html') {
      const html = String(payload);
      // The page runs no scripts and loads nothing from elsewhere; only its own inline styles apply.
      res.writeHead(200, {
        'content-type': 'text/html; charset=utf-8',
        'content-length': Buffer.byteLength(html),
        'content-security-policy': "default-src 'none'; style-src 'unsafe-inline'; img-src 'self'; base-uri 'none'; form-action 'none'; frame-ancestors 'none'",
        'x-content-type-options': 'nosniff',
        'referrer-policy': 'no-referrer',
        'cache-control': 'no-store',
      });
      res.end(html);
      return;
    }
    sendJson(res, 200, route.api === 'aggregator' ? aggregatorSuccess(payload, requestId) : payload, result.replayed ? { 'idempotent-replayed': 'true' } : {});
  }

  return startHttpService({
    name: 'rest-adapter',
    host: config.host,
    port: options.port ?? config.ports.rest,
    logger,
    // Ready while it can serve; the gateway behind it has readiness of its own.
    ready: async () => true,
    cors: { origins: config.corsOrigins },
    metrics: config.metricsPort === undefined,
    limits: config.httpLimits,
    handle,
  });
}
