/** GraphQL over the HTTP kit: the `/graphql` endpoint of every service, and the same endpoint answered in this process. */
import type { IncomingHttpHeaders } from 'node:http';
import { HeaderMap, type ApolloServer, type BaseContext } from '@apollo/server';
import { GraphQLError } from 'graphql';
import { ErrorCode } from '../contracts/errors.js';
import { localAnswer, readLocalBody, turnOfTheLoop, type LocalPost } from '../http/transport.js';
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

/** Builds a request's context; `request` is the GraphQL request as received (parsed body, query string), before the runner reads it. */
export type ContextBuilder<TContext> = (
  source: RequestSource,
  scope: RequestScope,
  request: { body: unknown; search: string },
) => Promise<TContext>;

/** Builds a request's context; an unexpected failure (not a GraphQLError) is logged here with the request id, as the runner answers it without its detail. */
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

/** A request's headers as Apollo's types take them (a repeated header joined with commas). */
export function headerMapOf(headers: IncomingHttpHeaders): HeaderMap {
  const map = new HeaderMap();
  for (const name in headers) {
    const value = headers[name];
    if (value !== undefined) map.set(name, Array.isArray(value) ? value.join(', ') : value);
  }
  return map;
}

/** Our logger as Apollo's types take one: its warnings and errors kept, its chatter dropped. */
export function apolloLogger(logger: Logger) {
  return {
    debug: () => {},
    info: () => {},
    warn: (message: unknown) => logger.warn(String(message)),
    error: (message: unknown) => logger.error(String(message)),
  };
}

/** An answer of the endpoint: status, headers (lower-case names) and body, whole or in chunks. */
interface EndpointAnswer {
  status: number;
  headers: Record<string, string>;
  body: string | AsyncIterable<string>;
}

/**
 * Runs one GraphQL request as it came (method, headers, query string, parsed body), building its
 * context with `context` when it needs one: Apollo Server for the subgraphs, the gateway's own
 * operation pipeline for the gateway.
 */
export type GraphQLRunner<TContext> = (
  request: { method: string; headers: IncomingHttpHeaders; search: string; body: unknown },
  context: () => Promise<TContext>,
) => Promise<EndpointAnswer>;

/** Runs requests through Apollo Server's integration API (no web framework). */
export function apolloRunner<TContext extends BaseContext>(apollo: ApolloServer<TContext>): GraphQLRunner<TContext> {
  return async (request, context) => {
    const response = await apollo.executeHTTPGraphQLRequest({
      httpGraphQLRequest: { method: request.method, headers: headerMapOf(request.headers), search: request.search, body: request.body },
      context,
    });
    return {
      status: response.status ?? 200,
      headers: Object.fromEntries(response.headers),
      body: response.body.kind === 'complete' ? response.body.string : response.body.asyncIterator,
    };
  };
}

/** What serving `/graphql` takes: the body limit, the context, and what to do when a body is refused for its size. */
export interface GraphQLEndpointOptions<TContext> {
  /** The largest body read, or how to tell it from the request's headers (before any byte of the body is read). */
  bodyLimitBytes: number | ((headers: IncomingHttpHeaders) => number);
  context: ContextBuilder<TContext>;
  /** Called when a body is refused for its size. */
  onBodyTooLarge?: () => void;
}

const jsonAnswer = (status: number, body: unknown, headers: Record<string, string> = {}): EndpointAnswer => ({
  status,
  headers: { 'content-type': 'application/json; charset=utf-8', ...headers },
  body: JSON.stringify(body),
});

/**
 * The endpoint's answer to one request, however it came: the body read within its limit (`read`
 * refuses more), parsed, its depth checked, then the operation run. The HTTP endpoint and the
 * in-process one differ only in how they read the body and write the answer.
 */
async function answerRequest<TContext>(
  run: GraphQLRunner<TContext>,
  options: GraphQLEndpointOptions<TContext>,
  source: RequestSource,
  scope: RequestScope,
  request: { method: string; search: string; read: (limit: number) => Promise<string> },
): Promise<EndpointAnswer> {
  let body: unknown = undefined;
  if (request.method === 'POST') {
    const limit = typeof options.bodyLimitBytes === 'number' ? options.bodyLimitBytes : options.bodyLimitBytes(source.headers);
    let text: string;
    try {
      text = await request.read(limit);
    } catch (error) {
      if (!(error instanceof BodyTooLargeError)) throw error;
      options.onBodyTooLarge?.();
      // The rest of the body is not read: the connection is closed after the answer.
      return jsonAnswer(
        413,
        { errors: [{ message: error.message, extensions: { code: ErrorCode.PAYLOAD_TOO_LARGE } }] },
        { connection: 'close' },
      );
    }
    try {
      body = text === '' ? undefined : JSON.parse(text);
    } catch {
      return jsonAnswer(400, NOT_JSON);
    }
    if (nestsDeeperThan(body)) return jsonAnswer(400, TOO_DEEP);
  }
  return inSpan('graphql.operation', SpanKind.INTERNAL, {}, () =>
    run({ method: request.method, headers: source.headers, search: request.search, body }, () =>
      contextLogged(options.context, source, scope, { body, search: request.search }),
    ),
  );
}

/** Serves `/graphql` with a runner: reads the body, builds the context, and writes the runner's answer. */
export function graphqlHandler<TContext>(run: GraphQLRunner<TContext>, options: GraphQLEndpointOptions<TContext>): Handler {
  return async (req, res, scope) => {
    const url = new URL(req.url ?? '/', 'http://localhost');
    if (url.pathname !== '/graphql') {
      sendJson(res, 404, { error: { code: ErrorCode.NOT_FOUND, message: `No route for ${url.pathname}` }, requestId: scope.requestId });
      return;
    }
    scope.route = '/graphql';
    const source = { headers: req.headers, remoteAddress: req.socket.remoteAddress };
    const answer = await answerRequest(run, options, source, scope, {
      method: req.method ?? 'GET',
      search: url.search,
      read: (limit) => readBody(req, limit),
    });
    for (const [key, value] of Object.entries(answer.headers)) res.setHeader(key, value);
    res.statusCode = answer.status;
    if (typeof answer.body === 'string') {
      res.end(answer.body);
      return;
    }
    for await (const chunk of answer.body) res.write(chunk);
    res.end();
  };
}

/**
 * The same endpoint answering a POST made in this process (the REST adapter beside the gateway),
 * for a transport to offer (`Transport.serve`): the same limits, context, plugins, statuses and
 * headers as over HTTP, without the socket; one access-log line per request, as over HTTP.
 */
export function graphqlLocal<TContext>(
  run: GraphQLRunner<TContext>,
  options: GraphQLEndpointOptions<TContext>,
  logger: Logger,
  service: string,
): LocalPost {
  return async (headers, text) => {
    await turnOfTheLoop();
    const requestId = requestIdOf({ headers });
    return serveInSpan(
      'POST /graphql',
      headers,
      { 'http.request.method': 'POST', 'http.route': '/graphql', 'service.name': service, 'request.id': requestId },
      async (span) => {
        const started = process.hrtime.bigint();
        const scope: RequestScope = { requestId, logger: logger.child({ requestId }) };
        let status = 500;
        try {
          const source = { headers, remoteAddress: undefined };
          const answer = await answerRequest(run, options, source, scope, {
            method: 'POST',
            search: '',
            read: (limit) => readLocalBody(text, limit),
          });
          let body = '';
          if (typeof answer.body === 'string') body = answer.body;
          else for await (const chunk of answer.body) body += chunk;
          status = answer.status;
          return localAnswer(status, answer.headers, body);
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
  };
}
