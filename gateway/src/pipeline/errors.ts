import { GraphQLError, type GraphQLErrorOptions, type GraphQLFormattedError } from 'graphql';
import { HeaderMap } from '@apollo/server';
import { ApolloServerErrorCode } from '@apollo/server/errors';

/** The status and headers an error asks its answer for (`extensions.http`), as Apollo Server's errors carry them. */
export interface AnswerHead {
  status?: number;
  headers: HeaderMap;
}

/** A GraphQL error with one of Apollo Server's codes, asking for `status` (and `headers`) unless its extensions say otherwise. */
export function pipelineError(
  code: ApolloServerErrorCode,
  message: string,
  options: GraphQLErrorOptions & { status?: number; headers?: ReadonlyArray<[string, string]> } = {},
): GraphQLError {
  const { status, headers, extensions, ...rest } = options;
  const http = status === undefined ? {} : { http: { status, headers: new HeaderMap(headers ?? []) } };
  return new GraphQLError(message, { ...rest, extensions: { ...http, ...extensions, code } });
}

/** A request the pipeline cannot take as sent: 400 BAD_REQUEST unless `status` says otherwise. */
export function badRequest(message: string, status = 400, headers?: ReadonlyArray<[string, string]>): GraphQLError {
  return pipelineError(ApolloServerErrorCode.BAD_REQUEST, message, { status, headers });
}

/**
 * An error of any kind as a GraphQL error: an `Error` keeps its message behind `prefix` and is kept
 * as the original; a thrown value that is not an `Error` is named as such, without the prefix.
 */
export function asGraphQLError(error: unknown, prefix = ''): GraphQLError {
  if (error instanceof GraphQLError) return error;
  if (error instanceof Error) return new GraphQLError(prefix + error.message, { originalError: error });
  return new GraphQLError(`Unexpected error value: ${String(error)}`);
}

/** Merges `from` into `into`: its status, when it has one, then its headers over those already there. */
export function mergeHead(into: AnswerHead, from: Partial<AnswerHead>): void {
  if (from.status) into.status = from.status;
  for (const [name, value] of from.headers ?? []) into.headers.set(name, value);
}

function isAnswerHead(value: unknown): value is Partial<AnswerHead> {
  if (!value || typeof value !== 'object') return false;
  const head = value as { status?: unknown; headers?: unknown };
  return (!('status' in head) || typeof head.status === 'number') && (!('headers' in head) || head.headers instanceof Map);
}

/** How errors are formatted for an answer: the service's `formatError`, and whether stack traces are sent. */
export interface ErrorFormatting {
  formatError: (formatted: GraphQLFormattedError, error: unknown) => GraphQLFormattedError;
  includeStacktrace: boolean;
}

/**
 * Errors as sent, each through `formatError` with its code defaulting to INTERNAL_SERVER_ERROR, and
 * the status and headers their `extensions.http` asked for (taken out of what is sent), merged into
 * `head` in order. A formatter that throws answers a generic internal error in its place.
 */
export function formatErrors(errors: ReadonlyArray<unknown>, formatting: ErrorFormatting, head: AnswerHead): GraphQLFormattedError[] {
  const enriched = (error: unknown): GraphQLFormattedError => {
    const graphqlError = asGraphQLError(error);
    const extensions: Record<string, unknown> = {
      ...graphqlError.extensions,
      code: graphqlError.extensions.code ?? ApolloServerErrorCode.INTERNAL_SERVER_ERROR,
    };
    if (isAnswerHead(extensions.http)) {
      mergeHead(head, extensions.http);
      delete extensions.http;
    }
    if (formatting.includeStacktrace) extensions.stacktrace = graphqlError.stack?.split('\n');
    return { ...graphqlError.toJSON(), extensions };
  };
  return errors.map((error) => {
    try {
      return formatting.formatError(enriched(error), error);
    } catch (formattingError) {
      if (formatting.includeStacktrace) return enriched(formattingError);
      return { message: 'Internal server error', extensions: { code: ApolloServerErrorCode.INTERNAL_SERVER_ERROR } };
    }
  });
}
