import { ErrorCode } from '../../platform/contracts/errors.js';
import { ownValue } from '../../platform/contracts/own.js';

/** Which of the two specs a route belongs to; it decides the envelope of successes and errors. */
export type Api = 'end-user' | 'aggregator';

/** An error as the adapter reports it: the graph's code, a message, and the field at fault where there is one. */
export interface RouteError {
  code: string;
  message: string;
  field?: string | undefined;
}

/**
 * Error body of the end-user API (the spec leaves it open):
 * `{ success: false, error: { code, message, field? }, requestId }`.
 */
export function endUserError(error: RouteError, requestId: string) {
  return { success: false, error: { code: error.code, message: error.message, ...(error.field ? { field: error.field } : {}) }, requestId };
}

/** Aggregator codes are lower-case words; `unauthorized` is the one the spec shows. */
const AGGREGATOR_CODES: Partial<Record<string, string>> = {
  [ErrorCode.UNAUTHENTICATED]: 'unauthorized',
  [ErrorCode.TOKEN_MISSING]: 'unauthorized',
  [ErrorCode.ACTOR_LOCKED]: 'unauthorized',
  [ErrorCode.FORBIDDEN]: 'forbidden',
  [ErrorCode.NOT_FOUND]: 'not_found',
};

/**
 * Error body of the aggregator API, in its envelope: `{ code, message, field?, requestId }`,
 * where `code` is never "0".
 */
/** The aggregator API's spelling of one of the graph's error codes. */
export function aggregatorCode(code: string): string {
  return ownValue(AGGREGATOR_CODES, code) ?? code.toLowerCase();
}

export function aggregatorError(error: RouteError, requestId: string) {
  return { code: aggregatorCode(error.code), message: error.message, ...(error.field ? { field: error.field } : {}), requestId };
}

/** Success envelope of the aggregator API: `{ code: "0", data, requestId }`. */
export function aggregatorSuccess(data: unknown, requestId: string) {
  return { code: '0', data, requestId };
}
