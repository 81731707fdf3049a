import type { IncomingHttpHeaders } from 'node:http';
import { HeaderMap, type BaseContext, type GraphQLRequest } from '@apollo/server';
import { headerMapOf } from '../../../platform/graphql/apollo-http.js';
import { Kind, type FormattedExecutionResult } from 'graphql';
import { badRequest, asGraphQLError, formatErrors, type AnswerHead, type ErrorFormatting } from './errors.js';
import { answerTypeFor, DEFAULT_ANSWER_TYPE, essenceOf, preventCsrf } from './media-types.js';
import type { OperationPipeline } from './operation.js';

/** A GraphQL request as it came over HTTP: its method, headers, query string and parsed body. */
export interface HttpGraphQLRequest {
  method: string;
  headers: IncomingHttpHeaders;
  search: string;
  body: unknown;
}

/** An answer to send: status, headers (lower-case names) and body. */
export interface HttpGraphQLAnswer {
  status: number;
  headers: Record<string, string>;
  body: string;
}

const isRecord = (value: unknown): value is Record<string, unknown> =>
  value !== null && typeof value === 'object' && !Buffer.isBuffer(value) && !Array.isArray(value);

/** A search parameter given at most once. */
function searchParam(params: URLSearchParams, name: string): string | undefined {
  const values = params.getAll(name);
  if (values.length > 1) throw badRequest(`The '${name}' search parameter may only be specified once.`);
  return values[0];
}

/** A search parameter that holds a JSON object, given at most once. */
function jsonSearchParam(params: URLSearchParams, name: string): Record<string, unknown> | undefined {
  const value = searchParam(params, name);
  if (value === undefined) return undefined;
  let parsed: unknown;
  try {
    parsed = JSON.parse(value);
  } catch {
    throw badRequest(`The ${name} search parameter contains invalid JSON.`);
  }
  if (!isRecord(parsed)) throw badRequest(`The ${name} search parameter should contain a JSON-encoded object.`);
  return parsed;
}

/** The GraphQL request an HTTP request carries (GraphQL over HTTP: a POST's JSON body, or a GET's query string), refused with 400 when malformed. */
function graphqlRequestOf(http: HttpGraphQLRequest, headers: HeaderMap): GraphQLRequest {
  const request = { method: http.method, headers, search: http.search, body: http.body };
  switch (http.method) {
    case 'POST': {
      const body = http.body;
      if (!isRecord(body) || Object.keys(body).length === 0) {
        throw badRequest('POST body missing, invalid Content-Type, or JSON object has no keys.');
      }
      const { query, variables, extensions, operationName } = body;
      if (query && typeof query !== 'string') {
        throw badRequest(
          (query as { kind?: unknown }).kind === Kind.DOCUMENT
            ? "GraphQL queries must be strings. It looks like you're sending the internal graphql-js representation of a parsed query in your request instead of a request in the GraphQL query language. You can convert an AST to a string using the `print` function from `graphql`, or use a client like `apollo-client` which converts the internal representation to a string for you."
            : 'GraphQL queries must be strings.',
        );
      }
      if (typeof variables === 'string')
        throw badRequest('`variables` in a POST body should be provided as an object, not a recursively JSON-encoded string.');
      if (typeof extensions === 'string')
        throw badRequest('`extensions` in a POST body should be provided as an object, not a recursively JSON-encoded string.');
      if ('extensions' in body && extensions !== null && !isRecord(extensions))
        throw badRequest('`extensions` in a POST body must be an object if provided.');
      if ('variables' in body && variables !== null && !isRecord(variables))
        throw badRequest('`variables` in a POST body must be an object if provided.');
      if ('operationName' in body && operationName !== null && typeof operationName !== 'string')
        throw badRequest('`operationName` in a POST body must be a string if provided.');
      return {
        query: typeof query === 'string' ? query : undefined,
        operationName: typeof operationName === 'string' ? operationName : undefined,
        variables: isRecord(variables) ? variables : undefined,
        extensions: isRecord(extensions) ? extensions : undefined,
        http: request,
      };
    }
    case 'GET': {
      const contentType = headers.get('content-type');
      if (contentType !== undefined && essenceOf(contentType) !== 'application/json') {
        throw badRequest('GET requests may not have a content-type header other than application/json.', 415);
      }
      const params = new URLSearchParams(http.search);
      return {
        query: searchParam(params, 'query'),
        operationName: searchParam(params, 'operationName'),
        variables: jsonSearchParam(params, 'variables'),
        extensions: jsonSearchParam(params, 'extensions'),
        http: request,
      };
    }
    default:
      throw badRequest('Apollo Server supports only GET/POST requests.', 405, [['allow', 'GET, POST']]);
  }
}

/** The body of a single answer: errors first, then data and extensions. */
const bodyOf = (result: FormattedExecutionResult): string =>
  `${JSON.stringify({ errors: result.errors, data: result.data, extensions: result.extensions })}\n`;

/**
 * Answers GraphQL over HTTP with the operation pipeline, as Apollo Server's HTTP layer does: a
 * browser's cross-site simple request refused (CSRF), the context built (a failure answered with
 * its own status, or 500), one operation per request (no batching), the request read from a POST's
 * body or a GET's query string, and the answer sent as JSON or GraphQL's own media type by the
 * request's `Accept` (406 when it takes neither, before the operation runs).
 */
export function createHttpAnswerer<TContext extends BaseContext>(pipeline: OperationPipeline<TContext>, formatting: ErrorFormatting) {
  const errorAnswer = (error: unknown, accept: string | undefined): HttpGraphQLAnswer => {
    const head: AnswerHead = { status: undefined, headers: new HeaderMap() };
    const errors = formatErrors([error], formatting, head);
    return {
      status: head.status ?? 500,
      headers: { ...Object.fromEntries(head.headers), 'content-type': answerTypeFor(accept) ?? DEFAULT_ANSWER_TYPE },
      body: bodyOf({ errors }),
    };
  };
  return async (http: HttpGraphQLRequest, context: () => Promise<TContext>): Promise<HttpGraphQLAnswer> => {
    const headers = headerMapOf(http.headers);
    const accept = headers.get('accept');
    try {
      preventCsrf(headers);
      let contextValue: TContext;
      try {
        contextValue = await context();
      } catch (error) {
        return errorAnswer(asGraphQLError(error, 'Context creation failed: '), accept);
      }
      if (http.method === 'POST' && Array.isArray(http.body)) throw badRequest('Operation batching disabled.');
      const request = graphqlRequestOf(http, headers);
      const answerType = answerTypeFor(accept);
      if (answerType === null) {
        throw badRequest(
          "An 'accept' header was provided for this request which does not accept application/json; charset=utf-8 or application/graphql-response+json; charset=utf-8",
          406,
        );
      }
      const response = await pipeline.run(request, contextValue);
      if (response.body.kind !== 'single') throw new Error('An incremental answer, which the gateway does not send');
      if (!response.http.headers.get('content-type')) response.http.headers.set('content-type', answerType);
      return {
        status: response.http.status ?? 200,
        headers: Object.fromEntries(response.http.headers),
        body: bodyOf(response.body.singleResult),
      };
    } catch (error) {
      return errorAnswer(error, accept);
    }
  };
}
