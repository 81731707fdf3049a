/** Apollo Server over the HTTP kit: the `/graphql` endpoint of every service, and the same endpoint answered in this process. */
import { STATUS_CODES, type IncomingHttpHeaders } from 'node:http';
import { HeaderMap, type ApolloServer, type BaseContext } from '@apollo/server';
import { GraphQLError } from 'graphql';
import { ErrorCode } from '../contracts/errors.js';
import type { LocalPost } from '../http/transport.js';
import type { Logger } from '../runtime/logger.js';
import { httpRequests } from '../telemetry/metrics.js';
import { inSpan, serveInSpan, SpanKind, SpanStatusCode } from '../telemetry/tracing.js';
import {
  MAX_JSON_DEPTH,
  nestsDeeperThan,
  readBody,
  BodyTooLargeError,
  requestIdOf,
  sendJson,
  msSince,
  type Handler,
  type RequestScope,
} from '../http/server.js';

/** A request's headers as Apollo takes them (a repeated header joined with commas). */
export function headerMapOf(headers: IncomingHttpHeaders): HeaderMap {
  const map = new HeaderMap();
  for (const [key, value] of Object.entries(headers)) {
    if (value !== undefined) map.set(key, Array.isArray(value) ? value.join(', ') : value);
  }
  return map;
}

/** The GraphQL endpoint's answer (400) to a body nested deeper than MAX_JSON_DEPTH, over HTTP and in this process alike. */
const TOO_DEEP = {
  errors: [{ message: `The request body nests deeper than ${MAX_JSON_DEPTH} levels.`, extensions: { code: ErrorCode.BAD_REQUEST } }],
};

/** The GraphQL endpoint's answer (400) to a body that is not JSON, over HTTP and in this process alike. */
const NOT_JSON = { errors: [{ message: 'The request body is not valid JSON.', extensions: { code: ErrorCode.BAD_REQUEST } }] };

/** What a GraphQL request's context is built from: its headers and the address it came from. */
export interface RequestSource {
  headers: IncomingHttpHeaders;
  remoteAddress: string | undefined;
}

/** Builds a request's context; `request` is the GraphQL request as received (parsed body, query string), before Apollo reads it. */
export type ContextBuilder<TContext> = (
  source: RequestSource,
  scope: RequestScope,
  request: { body: unknown; search: string },
) => Promise<TContext>;

/**
 * Builds a request's context. Apollo answers a failure here without running the request's plugins,
 * so an unexpected one (not a GraphQLError) is logged here, with the request id.
 */
async function contextLogged<TContext>(
  context: ContextBuilder<TContext>,
  source: RequestSource,
  scope: RequestScope,
  request: { body: unknown; search: string },
): Promise<TContext> {
  try {
    return await context(source, scope, request);
  } catch (error) {
    if (!(error instanceof GraphQLError)) scope.logger.error('unexpected error', { requestId: scope.requestId, error });
    throw error;
  }
}

/** Runs one GraphQL request through Apollo, in its span: the one step the HTTP endpoint and the in-process one share after reading the body. */
function runOperation<TContext extends BaseContext>(
  apollo: ApolloServer<TContext>,
  context: ContextBuilder<TContext>,
  source: RequestSource,
  scope: RequestScope,
  request: { method: string; search: string; body: unknown },
) {
  return inSpan('graphql.operation', SpanKind.INTERNAL, {}, () =>
    apollo.executeHTTPGraphQLRequest({
      httpGraphQLRequest: { method: request.method, headers: headerMapOf(source.headers), search: request.search, body: request.body },
      context: () => contextLogged(context, source, scope, { body: request.body, search: request.search }),
    }),
  );
}

/** A GraphQL POST answered: status, headers (lower-case names) and body text. */
interface GraphQLAnswer {
  status: number;
  headers: Record<string, string>;
  text: string;
}

/** A GraphQL POST handled by a server in this process, as if it had come over HTTP from `source`, under the caller's request id. */
export type LocalGraphQL = (source: RequestSource, body: unknown, requestId: string) => Promise<GraphQLAnswer>;

/**
 * The same Apollo server answering a POST made in this process (the REST adapter beside the
 * gateway): the same context, plugins, statuses and headers as over HTTP, without the HTTP; one
 * access-log line per request, as over HTTP.
 */
export function apolloLocal<TContext extends BaseContext>(
  apollo: ApolloServer<TContext>,
  context: ContextBuilder<TContext>,
  logger: Logger,
  service: string,
): LocalGraphQL {
  return (source, body, requestId) =>
    serveInSpan(
      'POST /graphql',
      source.headers,
      { 'http.request.method': 'POST', 'http.route': '/graphql', 'service.name': service, 'request.id': requestId },
      async (span) => {
        const started = process.hrtime.bigint();
        const scope: RequestScope = { requestId, logger: logger.child({ requestId }) };
        let status = 500;
        try {
          // The HTTP endpoint's own refusal of a body nested too deep, for the same answer either way.
          if (nestsDeeperThan(body)) {
            status = 400;
            return { status, headers: { 'content-type': 'application/json' }, text: JSON.stringify(TOO_DEEP) };
          }
          const response = await runOperation(apollo, context, source, scope, { method: 'POST', search: '', body });
          let text = '';
          if (response.body.kind === 'complete') text = response.body.string;
          else for await (const chunk of response.body.asyncIterator) text += chunk;
          status = response.status ?? 200;
          return { status, headers: Object.fromEntries(response.headers), text };
        } finally {
          span.setAttribute('http.response.status_code', status);
          if (status >= 500) span.setStatus({ code: SpanStatusCode.ERROR });
          span.end();
          const ms = msSince(started);
          httpRequests.observe({ service, method: 'POST', route: '/graphql', status: String(status) }, ms / 1000);
          scope.logger.info('request', { method: 'POST', path: '/graphql', status, ms, from: 'this process' });
        }
      },
    );
}

/**
 * A JSON POST handled by `handle` in this process, for a transport to offer (`Transport.serve`).
 * A body that is not JSON is 400, as over HTTP.
 */
export function localPost(handle: LocalGraphQL): LocalPost {
  return async (headers, text) => {
    // A turn of the event loop first, as a socket would take: a chain of calls in this process
    // must not run as one long stretch of microtasks while connections wait to be accepted and read.
    await new Promise((resolve) => setImmediate(resolve));
    let body: unknown;
    try {
      body = JSON.parse(text);
    } catch {
      return {
        status: 400,
        statusText: 'Bad Request',
        headers: { 'content-type': 'application/json' },
        text: JSON.stringify(NOT_JSON),
      };
    }
    const answer = await handle({ headers, remoteAddress: undefined }, body, requestIdOf({ headers }));
    return { status: answer.status, statusText: STATUS_CODES[answer.status] ?? '', headers: answer.headers, text: answer.text };
  };
}

/**
 * Serves an Apollo server on `/graphql` through Apollo's integration API (no web framework):
 * reads the body, builds the context, and writes Apollo's response.
 */
export function apolloHandler<TContext extends BaseContext>(
  apollo: ApolloServer<TContext>,
  options: {
    /** The largest body read, or how to tell it from the request's headers (before any byte of the body is read). */
    bodyLimitBytes: number | ((headers: IncomingHttpHeaders) => number);
    context: ContextBuilder<TContext>;
    /** Called when a body is refused for its size. */
    onBodyTooLarge?: () => void;
  },
): Handler {
  return async (req, res, scope) => {
    const url = new URL(req.url ?? '/', 'http://localhost');
    if (url.pathname === '/graphql') scope.route = '/graphql';
    if (url.pathname !== '/graphql') {
      sendJson(res, 404, { error: { code: ErrorCode.NOT_FOUND, message: `No route for ${url.pathname}` }, requestId: scope.requestId });
      return;
    }
    let body: unknown = undefined;
    if (req.method === 'POST') {
      let text: string;
      try {
        text = await readBody(
          req,
          typeof options.bodyLimitBytes === 'number' ? options.bodyLimitBytes : options.bodyLimitBytes(req.headers),
        );
      } catch (error) {
        if (error instanceof BodyTooLargeError) {
          options.onBodyTooLarge?.();
          // The rest of the body is not read: the connection is closed after the answer.
          sendJson(
            res,
            413,
            { errors: [{ message: error.message, extensions: { code: ErrorCode.PAYLOAD_TOO_LARGE } }] },
            { connection: 'close' },
          );
          return;
        }
        throw error;
      }
      try {
        body = text === '' ? undefined : JSON.parse(text);
      } catch {
        sendJson(res, 400, NOT_JSON);
        return;
      }
      if (nestsDeeperThan(body)) {
        sendJson(res, 400, TOO_DEEP);
        return;
      }
    }
    const source = { headers: req.headers, remoteAddress: req.socket.remoteAddress };
    const response = await runOperation(apollo, options.context, source, scope, { method: req.method ?? 'GET', search: url.search, body });
    for (const [key, value] of response.headers) res.setHeader(key, value);
    res.statusCode = response.status ?? 200;
    if (response.body.kind === 'complete') {
      res.end(response.body.string);
      return;
    }
    for await (const chunk of response.body.asyncIterator) res.write(chunk);
    res.end();
  };
}
