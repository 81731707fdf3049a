import type { ServerResponse } from 'node:http';
import { sendJson } from '../../platform/http/server.js';
import { aggregatorError, aggregatorSuccess, endUserError, type Api, type RouteError } from './envelopes.js';
import type { Refusal } from './refusal.js';
import type { Route } from './routes/index.js';

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
export function sendRefusal(res: ServerResponse, api: Api, refusal: Refusal, requestId: string): void {
  if (refusal.options.closeConnection) res.setHeader('connection', 'close');
  sendError(res, api, refusal.status, refusal.error, requestId, refusal.options.retryAfterSeconds);
}

/** Sends a route's success payload: an HTML page as is, JSON in the aggregator envelope or as the end-user route built it. */
export function sendSuccess(res: ServerResponse, route: Route, payload: unknown, requestId: string, replayed: boolean): void {
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
