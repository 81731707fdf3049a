import type { IncomingHttpHeaders, IncomingMessage, ServerResponse } from 'node:http';
import { serveInSpan } from '../telemetry/tracing.js';
import { BodyTooLargeError, readBody, requestIdOf, sendJson, type RequestScope } from './server.js';
import { localAnswer, readLocalBody, turnOfTheLoop, type LocalPost } from './transport.js';

/** A JSON answer: its status and body. */
interface JsonAnswer {
  status: number;
  body: unknown;
}

/**
 * A JSON POST route besides `/graphql`, written once and served the same way over HTTP and
 * through an in-process transport: `admit` sees only the headers (before any byte of the body is
 * read), `answer` the parsed body (null for one that is not JSON).
 */
export interface JsonRoute {
  path: string;
  maxBodyBytes: number;
  /** The answer to a body over `maxBodyBytes`. */
  tooLarge: JsonAnswer;
  /** An answer that refuses the caller from its headers alone, or null to go on. */
  admit: (headers: IncomingHttpHeaders) => JsonAnswer | null;
  answer: (body: unknown) => Promise<JsonAnswer>;
}

/** Parses a body as JSON; null for one that is not. */
function parsed(text: string): unknown {
  try {
    return JSON.parse(text) as unknown;
  } catch {
    return null;
  }
}

/** What `route` answers to a request with these headers and body text, whichever way it came. */
async function answerOf(route: JsonRoute, headers: IncomingHttpHeaders, read: () => Promise<string>): Promise<JsonAnswer> {
  const refused = route.admit(headers);
  if (refused) return refused;
  let text: string;
  try {
    text = await read();
  } catch (error) {
    if (error instanceof BodyTooLargeError) return route.tooLarge;
    throw error;
  }
  return route.answer(parsed(text));
}

/** Serves `routes` over HTTP: the handler answers a POST to one of their paths and returns true, or returns false. */
export function httpJsonRoutes(
  routes: readonly JsonRoute[],
): (req: IncomingMessage, res: ServerResponse, scope: RequestScope) => Promise<boolean> {
  return async (req, res, scope) => {
    const route = req.method === 'POST' ? routes.find((candidate) => candidate.path === req.url) : undefined;
    if (!route) return false;
    scope.route = route.path;
    const answer = await answerOf(route, req.headers, () => readBody(req, route.maxBodyBytes));
    sendJson(res, answer.status, answer.body);
    return true;
  };
}

/** Serves `route` in this process, for a transport to offer (`Transport.serve`), in a span as over HTTP. */
export function localJsonRoute(route: JsonRoute, service: string): LocalPost {
  return async (headers, text) => {
    await turnOfTheLoop();
    return serveInSpan(
      `POST ${route.path}`,
      headers,
      { 'http.route': route.path, 'service.name': service, 'request.id': requestIdOf({ headers }) },
      async (span) => {
        try {
          const answer = await answerOf(route, headers, () => readLocalBody(text, route.maxBodyBytes));
          return localAnswer(answer.status, { 'content-type': 'application/json; charset=utf-8' }, JSON.stringify(answer.body));
        } finally {
          span.end();
        }
      },
    );
  };
}
