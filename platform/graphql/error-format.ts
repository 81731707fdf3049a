import type { BaseContext } from '@apollo/server';
import type { RequestPlugin } from './request-plugin.js';
import { ApolloServerErrorCode, unwrapResolverError } from '@apollo/server/errors';
import type { GraphQLFormattedError } from 'graphql';
import { ErrorCode } from '../contracts/errors.js';
import { isConnectionDropped, isDatabaseUnavailable } from '../mongo/outage.js';
import type { ErrorFormatConfig } from '../runtime/config-slices.js';
import type { Logger } from '../runtime/logger.js';

/** Longest error message sent (longer ones are shortened). */
const MAX_ERROR_MESSAGE = 1000;

/**
 * A long message without its middle: a coercion error reads `Variable "$input" got invalid value
 * <the value> at "input.x"; <the reason>`, so the start and the end (the path, which names the
 * field, and the reason) are kept and the echoed value is cut. A cut never splits a surrogate pair.
 */
function shortened(message: string): string {
  const keep = (MAX_ERROR_MESSAGE - 5) / 2;
  let head = Math.floor(keep);
  let tail = message.length - Math.floor(keep);
  if (/[\uD800-\uDBFF]/.test(message.charAt(head - 1))) head -= 1;
  if (/[\uDC00-\uDFFF]/.test(message.charAt(tail))) tail += 1;
  return `${message.slice(0, head)} […] ${message.slice(tail)}`;
}

/** True for an error no resolver meant to answer with: Apollo's code for a thrown non-GraphQL error, or ours. */
function isUnexpected(code: unknown): boolean {
  return code === undefined || code === ApolloServerErrorCode.INTERNAL_SERVER_ERROR || code === ErrorCode.INTERNAL;
}

/**
 * Hides the message of unexpected errors in every mode (it may print internal objects), unless
 * `EXPOSE_ERROR_DETAILS` is on; known codes keep theirs. `unexpectedErrorLog` writes the detail to
 * the log with the request id. A database that cannot be reached is UNAVAILABLE (503 through the
 * REST adapter), with no driver message.
 */
export function formatError(config: ErrorFormatConfig, logger: Logger) {
  return (formatted: GraphQLFormattedError, error: unknown): GraphQLFormattedError => {
    const original = unwrapResolverError(error);
    if (isDatabaseUnavailable(original)) {
      return {
        message: 'The database is unavailable; try again shortly.',
        ...(formatted.path ? { path: formatted.path } : {}),
        extensions: { code: ErrorCode.UNAVAILABLE },
      };
    }
    if (isConnectionDropped(original)) {
      // Worth a retry, and worth a line in the log: which connection it was is not known here.
      logger.warn('connection dropped', { path: formatted.path, error: original });
      return {
        message: 'A connection this operation needed was dropped; try again shortly.',
        ...(formatted.path ? { path: formatted.path } : {}),
        extensions: { code: ErrorCode.UNAVAILABLE },
      };
    }
    const code = formatted.extensions?.code;
    // A message that echoes a client's value (an input coercion error) is shortened: a small request must not make a huge answer.
    if (formatted.message.length > MAX_ERROR_MESSAGE) formatted = { ...formatted, message: shortened(formatted.message) };
    if (isUnexpected(code) && !config.exposeErrorDetails) {
      return {
        message: 'Internal server error',
        ...(formatted.path ? { path: formatted.path } : {}),
        extensions: { code: ErrorCode.INTERNAL },
      };
    }
    return formatted;
  };
}

/**
 * Logs each unexpected error of an operation in full, with the request id, where it happened
 * (INTERNAL arriving from a subgraph was logged there). The answer carries only a generic message.
 */
export function unexpectedErrorLog(logger: Logger): RequestPlugin<BaseContext & { requestId?: string }> {
  return {
    async requestDidStart() {
      return {
        async didEncounterErrors({ errors, contextValue }) {
          for (const error of errors) {
            const code = error.extensions.code;
            if (code !== undefined && code !== ApolloServerErrorCode.INTERNAL_SERVER_ERROR) continue;
            const original = unwrapResolverError(error);
            if (isDatabaseUnavailable(original) || isConnectionDropped(original)) continue;
            logger.error('unexpected error', {
              requestId: contextValue.requestId,
              message: error.message,
              path: error.path,
              error: original,
            });
          }
        },
      };
    },
  };
}
