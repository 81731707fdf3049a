import type { IncomingMessage } from 'node:http';
import type { ServiceConfig } from '../../platform/runtime/config-slices.js';
import { ErrorCode } from '../../platform/contracts/errors.js';
import type { Transport } from '../../platform/http/transport.js';
import { REQUEST_ID_HEADER, type RequestScope } from '../../platform/http/server.js';
import { clientAddress, CLIENT_IP_HEADER, signClientIp } from '../../platform/security/signed-headers.js';
import { Refusal } from './refusal.js';
import { changesState, statusOfCode, type Route } from './routes/index.js';

/** A GraphQL response as the gateway sends it. */
interface GraphQLResponse {
  data?: Record<string, unknown> | null;
  errors?: Array<{ message: string; extensions?: { code?: string; field?: string; retryAfter?: number } }>;
}

/** The gateway's answer to one operation: its HTTP status, its body, and whether it is a kept answer replayed for an Idempotency-Key. */
export interface GatewayAnswer {
  status: number;
  body: GraphQLResponse;
  replayed: boolean;
}

/** How the adapter reaches the gateway: the deployment's settings, the transport, and each operation's text by file name. */
export interface GatewayLink {
  config: ServiceConfig<'rest-adapter'>;
  transport: Transport;
  operations: ReadonlyMap<string, string>;
}

/** How long the adapter waits for the gateway's answer, over HTTP or in this process (then 503). */
const GATEWAY_TIMEOUT_MS = 30_000;

/** The gateway's address answered something other than GraphQL's JSON: no gateway behind it is up. */
class GatewayUnavailable extends Error {
  constructor(readonly status: number) {
    super(`the gateway's address answered ${status} without a GraphQL body`);
  }
}

/** The headers the gateway gets: the request id, the credential and the route's optional headers, an Idempotency-Key where the route changes state, and the signed client address. */
function gatewayHeaders(link: GatewayLink, route: Route, req: IncomingMessage, scope: RequestScope): Record<string, string> {
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
  const clientIp = clientAddress(req.headers, req.socket.remoteAddress, link.config.trustProxy);
  if (clientIp) headers[CLIENT_IP_HEADER] = signClientIp(clientIp, link.config.internalSecret);
  return headers;
}

async function postOperation(
  link: GatewayLink,
  route: Route,
  variables: Record<string, unknown>,
  req: IncomingMessage,
  scope: RequestScope,
): Promise<GatewayAnswer> {
  const request = { query: link.operations.get(route.operation)!, variables };
  const answer = await link.transport.post(
    link.config.gatewayUrl,
    gatewayHeaders(link, route, req, scope),
    JSON.stringify(request),
    GATEWAY_TIMEOUT_MS,
  );
  let body: GraphQLResponse;
  try {
    body = JSON.parse(answer.text) as GraphQLResponse;
  } catch {
    // A load balancer in front of the gateways answers 503 in HTML while none is up.
    throw new GatewayUnavailable(answer.status);
  }
  return { status: answer.status, body, replayed: answer.headers['idempotent-replayed'] === 'true' };
}

/** Sends the route's operation to the gateway; a gateway that cannot be reached or answers no GraphQL is a Refusal (UNAVAILABLE). */
export async function callGateway(
  link: GatewayLink,
  route: Route,
  variables: Record<string, unknown>,
  req: IncomingMessage,
  scope: RequestScope,
): Promise<GatewayAnswer> {
  try {
    return await postOperation(link, route, variables, req, scope);
  } catch (error) {
    if (error instanceof GatewayUnavailable) scope.logger.warn('gateway unavailable', { status: error.status });
    else scope.logger.error('gateway call failed', { error });
    throw new Refusal(statusOfCode(route, ErrorCode.UNAVAILABLE), { code: ErrorCode.UNAVAILABLE, message: 'The service is unavailable.' });
  }
}
