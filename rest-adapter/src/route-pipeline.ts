import type { IncomingMessage, ServerResponse } from 'node:http';
import { ApolloServerErrorCode } from '@apollo/server/errors';
import { ErrorCode } from '../../platform/contracts/errors.js';
import { BodyTooLargeError, MAX_JSON_DEPTH, nestsDeeperThan, readBody, sendJson, type RequestScope } from '../../platform/http/server.js';
import { bodyRefusals } from '../../platform/telemetry/metrics.js';
import type { DecimalAnswers } from './contract/decimal-answers.js';
import type { RequestValidator } from './contract/request-validation.js';
import { aggregatorError, aggregatorSuccess, endUserError, type Api, type RouteError } from './envelopes.js';
import { callGateway, type GatewayAnswer, type GatewayLink } from './gateway-call.js';
import { readMultipart } from './multipart.js';
import { inputRefusal, Refusal } from './refusal.js';
import { JSON_BODY_LIMIT_BYTES, RouteInputError, statusOfCode, type Route, type UploadedFile } from './routes/index.js';

/** What serving a route needs besides the request: the gateway, the request checks and the decimal fields of the answers. */
export interface RoutePipeline extends GatewayLink {
  validator: RequestValidator;
  decimals: DecimalAnswers;
}

/** A request matched to a route: its path parameters and URL. */
export interface MatchedRequest {
  route: Route;
  params: Record<string, string>;
  /** A path parameter whose percent-encoding is malformed. */
  undecodable: string | undefined;
  url: URL;
}

/**
 * Serves a matched route: credential, body, checks and variables, the gateway's operation, then
 * the documented answer. Every refusal on the way answers in the route's envelope, with the
 * client's requestId once the body has given one the route echoes.
 */
export async function serveRoute(
  pipeline: RoutePipeline,
  matched: MatchedRequest,
  req: IncomingMessage,
  res: ServerResponse,
  scope: RequestScope,
): Promise<void> {
  const { route, params, undecodable, url } = matched;
  let requestId = scope.requestId;
  try {
    if (route.credential && !req.headers[route.credential]) {
      throw new Refusal(route.missingCredentialStatus ?? 401, {
        code: ErrorCode.TOKEN_MISSING,
        message: `The ${route.credential} header is required.`,
        field: route.credential,
      });
    }
    const { body, files, echoedRequestId } = await readRequestBody(route, req, pipeline.config.bodyLimitBytes);
    requestId = echoedRequestId ?? requestId;
    const variables = variablesOf(route, pipeline.validator, { params, undecodable, query: url.searchParams, body, files });
    const answer = await callGateway(pipeline, route, variables, req, scope);
    const payload = payloadOf(route, pipeline.operations.get(route.operation)!, answer, pipeline.decimals);
    sendSuccess(res, route, payload, requestId, answer.replayed);
  } catch (error) {
    if (!(error instanceof Refusal)) throw error;
    sendRefusal(res, route.api, error, requestId);
  }
}

/** A client requestId the aggregator spec allows echoing: 1-32 characters, no < or >, not only whitespace. */
const ECHOABLE_REQUEST_ID = /^(?!\s*$)[^<>]{1,32}$/;

/** What a route reads of a request's body: the JSON value, the uploaded files, and the client's requestId where the route echoes it. */
interface RequestBody {
  body: unknown;
  files: UploadedFile[];
  echoedRequestId?: string;
}

/**
 * Reads the body the route takes (JSON of the route's shape, a multipart upload, or none),
 * within the route's and the deployment's size limits; throws a Refusal for any other body.
 */
async function readRequestBody(route: Route, req: IncomingMessage, bodyLimitBytes: number): Promise<RequestBody> {
  if (route.body === 'none') return { body: undefined, files: [] };
  if (route.body === 'multipart') {
    try {
      const { files } = await readMultipart(req, route.maxFileBytes ?? bodyLimitBytes);
      return { body: undefined, files };
    } catch (error) {
      if (!(error instanceof RouteInputError)) throw error;
      throw inputRefusal(null, error);
    }
  }
  let text: string;
  try {
    text = await readBody(req, Math.min(route.maxBodyBytes ?? JSON_BODY_LIMIT_BYTES, bodyLimitBytes));
  } catch (error) {
    if (error instanceof BodyTooLargeError) {
      bodyRefusals.inc({ service: 'rest-adapter' });
      // The rest of the body is not read: the connection is closed after the answer.
      throw new Refusal(413, { code: ErrorCode.PAYLOAD_TOO_LARGE, message: error.message }, { closeConnection: true });
    }
    throw error;
  }
  let body: unknown;
  try {
    body = JSON.parse(text);
  } catch {
    throw new Refusal(400, { code: ErrorCode.BAD_REQUEST, message: 'The request body is not valid JSON.' });
  }
  if (nestsDeeperThan(body)) {
    throw new Refusal(400, { code: ErrorCode.BAD_REQUEST, message: `The request body nests deeper than ${MAX_JSON_DEPTH} levels.` });
  }
  const isArray = Array.isArray(body);
  if (body === null || typeof body !== 'object' || isArray !== (route.body === 'array')) {
    throw new Refusal(400, { code: ErrorCode.BAD_REQUEST, message: `The request body must be a JSON ${route.body}.` });
  }
  const echoed = route.requestIdOf?.(body);
  return echoed !== undefined && ECHOABLE_REQUEST_ID.test(echoed) ? { body, files: [], echoedRequestId: echoed } : { body, files: [] };
}

/** What the route table's checks and mapping see of a request whose body has been read. */
interface RequestParts {
  params: Record<string, string>;
  /** A path parameter whose percent-encoding is malformed. */
  undecodable: string | undefined;
  query: URLSearchParams;
  body: unknown;
  files: UploadedFile[];
}

/** Checks the request against the route's schemas and maps it onto the operation's variables; throws a Refusal when it cannot. */
function variablesOf(
  route: Route,
  validator: RequestValidator,
  { params, undecodable, query, body, files }: RequestParts,
): Record<string, unknown> {
  try {
    if (undecodable !== undefined)
      throw new RouteInputError(ErrorCode.BAD_REQUEST, `The path parameter ${undecodable} is not valid percent-encoding.`, undecodable);
    validator.check(route, { params, query, body });
    return route.variables({ params, body, query, files });
  } catch (error) {
    if (!(error instanceof RouteInputError)) throw error;
    throw inputRefusal(route, error);
  }
}

/** The field a GraphQL variable-coercion message points at: `... at "input.userName"; ...` gives `userName`. */
function fieldOfCoercionError(message: string): string | undefined {
  const at = /at "([^"]+)"/.exec(message)?.[1];
  return at?.split('.').slice(1).join('.') || undefined;
}

/** The Refusal of an answer that carries GraphQL errors: the first one's code, at the route's status for it. */
function refusalOfErrors(route: Route, answer: GatewayAnswer): Refusal | undefined {
  const first = answer.body.errors?.[0];
  if (!first) return undefined;
  const code = first.extensions?.code ?? ErrorCode.INTERNAL;
  const status = statusOfCode(route, code, answer.status >= 400 ? answer.status : 500);
  // A variable refused while coercing (a wrong type, a custom scalar) names its path in the message.
  const field = first.extensions?.field ?? fieldOfCoercionError(first.message);
  // eslint-disable-next-line @typescript-eslint/no-unsafe-enum-comparison -- code is the gateway's wire string, which ErrorCode's values are.
  const message = status >= 500 && code === ErrorCode.INTERNAL ? 'Internal server error.' : first.message;
  return new Refusal(
    status,
    // eslint-disable-next-line @typescript-eslint/no-unsafe-enum-comparison -- code is the gateway's wire string, which Apollo's codes are too.
    { code: code === ApolloServerErrorCode.BAD_USER_INPUT ? ErrorCode.BAD_REQUEST : code, message, field },
    { retryAfterSeconds: first.extensions?.retryAfter },
  );
}

/**
 * The route's success payload from the gateway's answer, its decimals as JSON numbers; throws a
 * Refusal for GraphQL errors and for data the route cannot answer with (say, an object that is not there).
 */
function payloadOf(route: Route, operation: string, answer: GatewayAnswer, decimals: DecimalAnswers): unknown {
  const refusal = refusalOfErrors(route, answer);
  if (refusal) throw refusal;
  try {
    return route.respond(decimals.toNumbers(operation, answer.body.data ?? {}));
  } catch (error) {
    if (!(error instanceof RouteInputError)) throw error;
    throw inputRefusal(route, error);
  }
}

/** Sends an error in the envelope of the route's API. */
export function sendError(
  res: ServerResponse,
  api: Api,
  status: number,
  error: RouteError,
  requestId: string,
  retryAfterSeconds?: number,
): void {
  // Every 429 says when to try again; the graph knows when, else a minute.
  const headers = status === 429 ? { 'retry-after': String(retryAfterSeconds ?? 60) } : undefined;
  sendJson(res, status, api === 'aggregator' ? aggregatorError(error, requestId) : endUserError(error, requestId), headers);
}

/** Sends a refusal; one that leaves a body unread also closes the connection after the answer. */
function sendRefusal(res: ServerResponse, api: Api, refusal: Refusal, requestId: string): void {
  if (refusal.options.closeConnection) res.setHeader('connection', 'close');
  sendError(res, api, refusal.status, refusal.error, requestId, refusal.options.retryAfterSeconds);
}

/** Sends a route's success payload: an HTML page as is, JSON in the aggregator envelope or as the end-user route built it. */
function sendSuccess(res: ServerResponse, route: Route, payload: unknown, requestId: string, replayed: boolean): void {
  if (route.responseType === 'html') {
    const html = String(payload);
    // The page runs no scripts and loads nothing from elsewhere; only its own inline styles apply.
    res.writeHead(200, {
      'content-type': 'text/html; charset=utf-8',
      'content-length': Buffer.byteLength(html),
      'content-security-policy':
        "default-src 'none'; style-src 'unsafe-inline'; img-src 'self'; base-uri 'none'; form-action 'none'; frame-ancestors 'none'",
      'x-content-type-options': 'nosniff',
      'referrer-policy': 'no-referrer',
      'cache-control': 'no-store',
    });
    res.end(html);
    return;
  }
  sendJson(
    res,
    200,
    route.api === 'aggregator' ? aggregatorSuccess(payload, requestId) : payload,
    replayed ? { 'idempotent-replayed': 'true' } : {},
  );
}
