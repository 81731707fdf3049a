import { GraphQLError } from 'graphql';

/**
 * Every error code the graph produces, in `extensions.code`. The REST adapter maps these
 * codes to the statuses the specs document; GraphQL clients read them directly.
 */
export enum ErrorCode {
  /** A body that is not JSON, or a value of the wrong type. */
  BAD_REQUEST = 'BAD_REQUEST',
  /** A value that breaks a documented pattern, length or rule; `extensions.field` names it. */
  VALIDATION_FAILED = 'VALIDATION_FAILED',
  /** A request that lacks an element every request of its kind needs (login: `channel`). */
  REQUIRED_ELEMENT_MISSING = 'REQUIRED_ELEMENT_MISSING',
  /** A login that lacks a property its channel requires. */
  CHANNEL_PROPERTY_MISSING = 'CHANNEL_PROPERTY_MISSING',
  /** A login channel that is not one of the documented ones. */
  INVALID_CHANNEL = 'INVALID_CHANNEL',
  /** A documented login channel that this caller or this deployment may not use. */
  CHANNEL_NOT_PERMITTED = 'CHANNEL_NOT_PERMITTED',
  /** A date/time stamp that is not ISO 8601. */
  INVALID_TIMESTAMP = 'INVALID_TIMESTAMP',
  /** Credentials missing, wrong, expired or revoked. */
  UNAUTHENTICATED = 'UNAUTHENTICATED',
  /** The actor is locked after repeated failures, or blocked. */
  ACTOR_LOCKED = 'ACTOR_LOCKED',
  /** Authenticated, but not allowed to do this. */
  FORBIDDEN = 'FORBIDDEN',
  /** The credential header the operation needs was not sent. */
  TOKEN_MISSING = 'TOKEN_MISSING',
  NOT_FOUND = 'NOT_FOUND',
  /** Recovering this user onto a new device is refused (a hardened user); an operator is told. */
  RECOVERY_REFUSED = 'RECOVERY_REFUSED',
  /** A confirmation or recovery code that is wrong, expired or used up. */
  CODE_INVALID = 'CODE_INVALID',
  /** A file whose type is not accepted. */
  UNSUPPORTED_MEDIA_TYPE = 'UNSUPPORTED_MEDIA_TYPE',
  /** A file or body over its size limit. */
  PAYLOAD_TOO_LARGE = 'PAYLOAD_TOO_LARGE',
  /** A GraphQL operation over a limit of depth, aliases, root fields or cost. */
  OPERATION_LIMIT_EXCEEDED = 'OPERATION_LIMIT_EXCEEDED',
  /** An operation that is not a registered (trusted) document, where only those may run. */
  OPERATION_NOT_TRUSTED = 'OPERATION_NOT_TRUSTED',
  /** An automatic persisted query whose `sha256Hash` is not the SHA-256 of the text sent with it. */
  PERSISTED_QUERY_HASH_MISMATCH = 'PERSISTED_QUERY_HASH_MISMATCH',
  /** An Idempotency-Key sent again with a different request. */
  IDEMPOTENCY_KEY_REUSED = 'IDEMPOTENCY_KEY_REUSED',
  /** Too many requests of a kind in a period. */
  RATE_LIMITED = 'RATE_LIMITED',
  /**
   * A subscription resumed from a position the event log no longer holds (older than its
   * retention): events after it may be gone, so the client reloads its state and subscribes anew.
   */
  EVENTS_EXPIRED = 'EVENTS_EXPIRED',
  /**
   * Every slot for checking one actor's credential is taken by checks in flight (the lockout's
   * limit, see subgraphs/user/src/auth/lockout.ts); `extensions.retryAfter` says when to retry.
   */
  TOO_MANY_ATTEMPTS = 'TOO_MANY_ATTEMPTS',
  /** A path that exists, asked with a method it does not answer; the answer's `Allow` header lists those it does. */
  METHOD_NOT_ALLOWED = 'METHOD_NOT_ALLOWED',
  /** A state transition that the current state does not allow. */
  CONFLICT = 'CONFLICT',
  /** A dependency (database, subgraph) did not answer. */
  UNAVAILABLE = 'UNAVAILABLE',
  INTERNAL = 'INTERNAL',
}

/** Creates the graph's error: a GraphQLError with `extensions.code` and, where one field is at fault, `extensions.field`. */
export function appError(
  code: ErrorCode,
  message: string,
  options: { field?: string; httpStatus?: number; retryAfterSeconds?: number } = {},
): GraphQLError {
  return new GraphQLError(message, {
    extensions: {
      code,
      ...(options.field ? { field: options.field } : {}),
      // RATE_LIMITED, TOO_MANY_ATTEMPTS: when another request may succeed; the REST adapter sends it as Retry-After.
      ...(options.retryAfterSeconds !== undefined ? { retryAfter: options.retryAfterSeconds } : {}),
      ...(options.httpStatus ? { http: { status: options.httpStatus } } : {}),
    },
  });
}
