import { ErrorCode } from '../contracts/errors.js';
import { randomUUID } from 'node:crypto';
import http, { type IncomingHttpHeaders, type IncomingMessage, type ServerResponse } from 'node:http';
import type { AddressInfo, Socket } from 'node:net';
import { context } from '@opentelemetry/api';
import { applyCors, type CorsPolicy } from './cors.js';
import type { HttpLimits } from '../runtime/config.js';
import type { Logger } from '../runtime/logger.js';
import { connectionRefusals, httpRequests, metricsExposition } from '../telemetry/metrics.js';
import { serveInSpan, SpanStatusCode } from '../telemetry/tracing.js';

/** The header that carries the request id from the REST adapter through the gateway to the subgraphs. */
export const REQUEST_ID_HEADER = 'x-request-id';

/** Takes the caller's request id when it is well-formed, or makes a new one. */
export function requestIdOf(req: { headers: IncomingHttpHeaders | Record<string, string> }): string {
  const given = req.headers[REQUEST_ID_HEADER];
  return typeof given === 'string' && /^[A-Za-z0-9_.:-]{1,64}$/.test(given) ? given : randomUUID();
}

export class BodyTooLargeError extends Error {
  constructor(readonly limit: number) {
    super(`request body exceeds ${limit} bytes`);
  }
}

/**
 * Reads a whole request body, refusing more than `limit` bytes. Listeners rather than the stream's
 * async iterator: the same reading without a promise and a wake-up per chunk.
 */
export function readBody(req: IncomingMessage, limit: number): Promise<string> {
  const declared = Number(req.headers['content-length'] ?? 0);
  if (declared > limit) return Promise.reject(new BodyTooLargeError(limit));
  if (req.readableEnded) return Promise.resolve('');
  if (req.destroyed) return Promise.reject(req.errored ?? new Error('the request closed before its body ended'));
  return new Promise((resolve, reject) => {
    const chunks: Buffer[] = [];
    let size = 0;
    const stop = () => {
      req.off('data', onData);
      req.off('end', onEnd);
      req.off('error', onError);
      req.off('close', onClose);
    };
    const onData = (chunk: Buffer) => {
      size += chunk.length;
      if (size <= limit) chunks.push(chunk);
      else {
        // The rest is left unread, not destroyed: the request's socket still carries the 413.
        stop();
        req.pause();
        reject(new BodyTooLargeError(limit));
      }
    };
    const onEnd = () => {
      stop();
      resolve(Buffer.concat(chunks, size).toString('utf8'));
    };
    const onError = (error: Error) => {
      stop();
      reject(error);
    };
    const onClose = () => {
      stop();
      reject(new Error('the request closed before its body ended'));
    };
    req.on('data', onData);
    req.on('end', onEnd);
    req.on('error', onError);
    req.on('close', onClose);
    req.resume();
  });
}

/** Deepest nesting of arrays and objects a JSON body may have: legitimate bodies stay far below it. */
export const MAX_JSON_DEPTH = 64;

/**
 * Whether a parsed JSON value nests deeper than `max`, measured without recursion: a body of a few
 * thousand nested brackets would otherwise overflow the stack of whatever walks it next
 * (serializing, coercing) and answer 500.
 */
export function nestsDeeperThan(value: unknown, max = MAX_JSON_DEPTH): boolean {
  const stack: Array<[unknown, number]> = [[value, 0]];
  while (stack.length > 0) {
    const [current, depth] = stack.pop()!;
    if (current === null || typeof current !== 'object') continue;
    if (depth >= max) return true;
    for (const member of Array.isArray(current) ? current : Object.values(current)) stack.push([member, depth + 1]);
  }
  return false;
}

export function sendJson(res: ServerResponse, status: number, body: unknown, headers: Record<string, string> = {}): void {
  const text = JSON.stringify(body);
  res.writeHead(status, { 'content-type': 'application/json; charset=utf-8', 'content-length': Buffer.byteLength(text), ...headers });
  res.end(text);
}

/** What a request handler receives besides the raw request and response. */
export interface RequestScope {
  requestId: string;
  logger: Logger;
  /** The route template that matched (`/graphql`, `/svc/v1/accounts/{SvcAccountId}`), set by the handler: the span's name and the metrics' label. */
  route?: string;
}

export type Handler = (req: IncomingMessage, res: ServerResponse, scope: RequestScope) => Promise<void>;

/** A started HTTP service. */
export interface HttpService {
  server: http.Server;
  port: number;
  url: string;
  /**
   * Turns not-ready at once and keeps answering for `ms`, so that a load balancer takes the
   * instance out before it stops accepting; `close` comes after.
   */
  drain(ms: number): Promise<void>;
  close(): Promise<void>;
}

/**
 * Starts an HTTP server with `/health` (alive), `/ready` (this process can serve: what it needs
 * of its own answers, and it is not draining), a request id on every request (echoed in the
 * response), a SERVER span continuing the caller's trace, one JSON access-log line and one
 * latency observation per request, `/metrics` where asked, CORS for the allowed browser origins,
 * and a clean close that lets requests in flight finish (cut after 5 s).
 */
export async function startHttpService(options: {
  name: string;
  host: string;
  port: number;
  logger: Logger;
  ready: () => Promise<boolean>;
  handle: Handler;
  /** Browser origins answered; none when absent (the subgraphs, which browsers never call). */
  cors?: CorsPolicy;
  /** Whether `GET /metrics` is answered here (not when the process serves it on a port of its own). */
  metrics: boolean;
  /** What a client is allowed: time, body pace and connections (`config.httpLimits`). */
  limits: HttpLimits;
}): Promise<HttpService> {
  const { logger, limits } = options;
  let closing = false;
  let draining = false;
  const server = http.createServer(
    {
      // Node's own limits, checked every second rather than every 30 s, so that they bound what they say.
      headersTimeout: limits.headersTimeoutMs,
      requestTimeout: limits.requestTimeoutMs,
      connectionsCheckingInterval: 1000,
    },
    (req, res) => {
      watchBody(req, res, limits, () => {
        connectionRefusals.inc({ service: options.name, reason: 'slow_body' });
        logger.warn('slow request body dropped', { path: (req.url ?? '').split('?')[0], remoteAddress: req.socket.remoteAddress });
      });
      const requestId = requestIdOf(req);
      // While closing, no connection is kept for another request, and one freed by its last answer is closed.
      if (closing) res.setHeader('connection', 'close');
      res.once('finish', () => {
        if (closing) setImmediate(() => server.closeIdleConnections());
      });
      res.setHeader(REQUEST_ID_HEADER, requestId);
      // Every answer: not to be sniffed, framed, cached or followed with a referrer (pages set their own policy on top).
      res.setHeader('x-content-type-options', 'nosniff');
      res.setHeader('x-frame-options', 'DENY');
      res.setHeader('referrer-policy', 'no-referrer');
      res.setHeader('cache-control', 'no-store');
      const path = (req.url ?? '').split('?')[0]!;
      if (req.method === 'GET' && (path === '/health' || path === '/ready' || (options.metrics && path === '/metrics'))) {
        void probe(req, res, path).catch((error: unknown) => {
          logger.error('unhandled error', { error, requestId });
          if (!res.headersSent) sendJson(res, 500, { error: { code: ErrorCode.INTERNAL, message: 'Internal server error' }, requestId });
        });
        return;
      }
      // The span names the route template, never the path: a path may carry a one-time code (/confirm/email/…).
      serveInSpan(
        req.method ?? 'GET',
        req.headers,
        { 'http.request.method': req.method ?? '', 'service.name': options.name, 'request.id': requestId },
        (span) => {
          const started = process.hrtime.bigint();
          const scope: RequestScope = { requestId, logger: logger.child({ requestId }) };
          // Once per request, when answered or when the client went away first (499): bound to the
          // request's trace, so that the access-log line carries its ids.
          let ended = false;
          const end = context.bind(context.active(), () => {
            if (ended) return;
            ended = true;
            const route = scope.route ?? 'unmatched';
            const status = res.writableFinished ? res.statusCode : 499;
            span.updateName(`${req.method} ${route}`);
            span.setAttributes({ 'http.route': route, 'http.response.status_code': status });
            if (status >= 500 || status === 499) span.setStatus({ code: SpanStatusCode.ERROR });
            span.end();
            const ms = msSince(started);
            httpRequests.observe({ service: options.name, method: req.method ?? '', route, status: String(status) }, ms / 1000);
            // A matched route logs its template (its parameters may be one-time codes); another path as sent.
            scope.logger.info('request', { method: req.method, path: scope.route ?? path, status, ms });
          });
          res.once('finish', end);
          res.once('close', end);
          const route = async () => {
            if (options.cors && applyCors(options.cors, req, res)) return;
            await options.handle(req, res, scope);
          };
          route().catch((error: unknown) => {
            scope.logger.error('unhandled error', { error });
            if (!res.headersSent) sendJson(res, 500, { error: { code: ErrorCode.INTERNAL, message: 'Internal server error' }, requestId });
            else res.end();
          });
        },
      );
    },
  );
  /** The probes and the metrics: not traced, logged or counted, so that they do not drown the requests. */
  const probe = async (req: IncomingMessage, res: ServerResponse, path: string) => {
    if (path === '/health') {
      sendJson(res, 200, { status: 'ok', service: options.name });
    } else if (path === '/ready') {
      if (draining || closing) {
        sendJson(res, 503, { status: 'draining', service: options.name });
        return;
      }
      const ok = await options.ready().catch(() => false);
      sendJson(res, ok ? 200 : 503, { status: ok ? 'ready' : 'unavailable', service: options.name });
    } else {
      const { contentType, text } = await metricsExposition();
      res.writeHead(200, { 'content-type': contentType, 'content-length': Buffer.byteLength(text), 'cache-control': 'no-store' });
      res.end(text);
    }
  };
  server.keepAliveTimeout = 65_000;
  capConnections(server, limits, (reason) => connectionRefusals.inc({ service: options.name, reason }));
  await new Promise<void>((resolve, reject) => {
    server.once('error', reject);
    server.listen(options.port, options.host, () => resolve());
  });
  const { port } = server.address() as AddressInfo;
  const url = `http://${options.host.includes(':') ? `[${options.host}]` : options.host}:${port}`;
  logger.info('listening', { url });
  return {
    server,
    port,
    url,
    drain: async (ms) => {
      draining = true;
      logger.info('draining', { ms });
      await new Promise((resolve) => setTimeout(resolve, ms));
    },
    close: () =>
      new Promise<void>((resolve) => {
        closing = true;
        server.close(() => resolve());
        server.closeIdleConnections();
        setTimeout(() => server.closeAllConnections(), 5000).unref();
      }),
  };
}

/**
 * Drops a request whose body stalls for `bodyIdleTimeoutMs`, or that, once that long under way,
 * has averaged less than `bodyMinBytesPerSecond`: a client trickling a body would otherwise hold
 * its connection until the request timeout. Progress is read from the socket's byte count, so
 * that the handler's own reading of the body is left alone.
 */
function watchBody(req: IncomingMessage, res: ServerResponse, limits: HttpLimits, dropped: () => void): void {
  const length = Number(req.headers['content-length'] ?? 0);
  if (req.complete || (!(length > 0) && req.headers['transfer-encoding'] === undefined)) return;
  const { socket } = req;
  const started = performance.now();
  const startBytes = socket.bytesRead;
  let lastBytes = startBytes;
  let lastProgress = started;
  const timer = setInterval(
    () => {
      if (req.complete || socket.destroyed) {
        clearInterval(timer);
        return;
      }
      const now = performance.now();
      if (socket.bytesRead > lastBytes) {
        lastBytes = socket.bytesRead;
        lastProgress = now;
      }
      const elapsed = now - started;
      const tooSlow = elapsed >= limits.bodyIdleTimeoutMs && ((lastBytes - startBytes) * 1000) / elapsed < limits.bodyMinBytesPerSecond;
      if (now - lastProgress >= limits.bodyIdleTimeoutMs || tooSlow) {
        clearInterval(timer);
        dropped();
        socket.destroy();
      }
    },
    Math.max(25, Math.min(1000, limits.bodyIdleTimeoutMs / 4)),
  );
  timer.unref();
  res.once('close', () => clearInterval(timer));
}

/**
 * Caps a server's connections: `maxConnections` in all (Node refuses the rest), and
 * `maxConnectionsPerAddress` from one client address (0: none), counted by the connection's own
 * peer address; a connection over either cap is closed as it arrives.
 */
function capConnections(server: http.Server, limits: HttpLimits, refused: (reason: 'server_cap' | 'address_cap') => void): void {
  server.maxConnections = limits.maxConnections;
  server.on('drop', () => refused('server_cap'));
  if (limits.maxConnectionsPerAddress === 0) return;
  const open = new Map<string, number>();
  server.on('connection', (socket: Socket) => {
    const address = socket.remoteAddress;
    if (address === undefined) return;
    const count = (open.get(address) ?? 0) + 1;
    if (count > limits.maxConnectionsPerAddress) {
      refused('address_cap');
      socket.destroy();
      return;
    }
    open.set(address, count);
    socket.once('close', () => {
      const left = (open.get(address) ?? 1) - 1;
      if (left === 0) open.delete(address);
      else open.set(address, left);
    });
  });
}

/** Milliseconds since `started` (process.hrtime.bigint()), to the microsecond: the access log's `ms`. */
export const msSince = (started: bigint) => Number((process.hrtime.bigint() - started) / 1000n) / 1000;
