import { ErrorCode } from '../../../platform/errors.js';
import type { Api } from '../envelopes.js';
import type { UploadedFile } from '../multipart.js';

/** The credential header a route takes. */
export type Credential = 'token' | 'x-svc-token' | 'x-svc-jwtoken';

/** What a route's mapping functions see of the HTTP request. */
export interface RouteInput {
  params: Record<string, string>;
  body: unknown;
  query: URLSearchParams;
  /** The files of a multipart route. */
  files: UploadedFile[];
}

/** One documented endpoint: path and aliases → GraphQL operation → documented envelope and status. */
export interface Route {
  method: 'GET' | 'PUT' | 'POST' | 'DELETE';
  /** The documented path and its aliases, with `:name` parameters. */
  paths: string[];
  api: Api;
  /** The credential header the route requires; null when it takes none. */
  credential: Credential | null;
  /** Status when the credential header is absent (401 unless the spec says otherwise). */
  missingCredentialStatus?: number;
  /** The body the route reads: a JSON object or array, a multipart/form-data upload, or none (any other body answers 400). */
  body: 'object' | 'array' | 'multipart' | 'none';
  /** For multipart routes: the largest file accepted. */
  maxFileBytes?: number;
  /** Headers passed on to the gateway when present, besides the credential (e.g. a service key). */
  optionalHeaders?: string[];
  /** The aggregator envelope's requestId: the client's own where the spec echoes it. */
  requestIdOf?: (body: unknown) => string | undefined;
  /** File name in `operations/`. */
  operation: string;
  /** Maps path, body and query to the operation's variables; may throw RouteInputError. */
  variables: (input: RouteInput) => Record<string, unknown>;
  /** Turns the operation's data into the documented success body (envelope included for end-user routes); may throw RouteInputError. */
  respond: (data: Record<string, unknown>) => unknown;
  /** `html`: `respond` returns an HTML document, sent as is (no envelope) under a strict content security policy. */
  responseType?: 'json' | 'html';
  /** Route-specific statuses by error code, over the defaults. */
  statuses?: Partial<Record<string, number>>;
}

/** A request that cannot be mapped onto the operation at all (e.g. a missing wrapper object). */
export class RouteInputError extends Error {
  constructor(readonly code: ErrorCode, message: string, readonly field?: string) {
    super(message);
  }
}

/** Statuses of error codes on every route, unless the route says otherwise. */
export const DEFAULT_STATUSES: Record<string, number> = {
  [ErrorCode.BAD_REQUEST]: 400,
  BAD_USER_INPUT: 400,
  GRAPHQL_VALIDATION_FAILED: 400,
  GRAPHQL_PARSE_FAILED: 400,
  [ErrorCode.VALIDATION_FAILED]: 400,
  [ErrorCode.REQUIRED_ELEMENT_MISSING]: 400,
  [ErrorCode.CHANNEL_PROPERTY_MISSING]: 400,
  [ErrorCode.INVALID_TIMESTAMP]: 400,
  [ErrorCode.INVALID_CHANNEL]: 400,
  [ErrorCode.UNAUTHENTICATED]: 401,
  [ErrorCode.TOKEN_MISSING]: 401,
  [ErrorCode.ACTOR_LOCKED]: 401,
  [ErrorCode.CHANNEL_NOT_PERMITTED]: 403,
  [ErrorCode.FORBIDDEN]: 403,
  [ErrorCode.NOT_FOUND]: 404,
  [ErrorCode.CODE_INVALID]: 400,
  [ErrorCode.RECOVERY_REFUSED]: 403,
  [ErrorCode.UNSUPPORTED_MEDIA_TYPE]: 415,
  [ErrorCode.PAYLOAD_TOO_LARGE]: 413,
  [ErrorCode.CONFLICT]: 409,
  [ErrorCode.RATE_LIMITED]: 429,
  [ErrorCode.UNAVAILABLE]: 503,
  [ErrorCode.INTERNAL]: 500,
};

/** The documented properties of an object; anything else is ignored, as legacy clients send extras. */
export function pick(body: unknown, fields: readonly string[]): Record<string, unknown> {
  if (body === null || typeof body !== 'object' || Array.isArray(body)) return {};
  const source = body as Record<string, unknown>;
  return Object.fromEntries(fields.filter((field) => source[field] !== undefined).map((field) => [field, source[field]]));
}

/** Drops null members the spec shows only when present (an alert's descriptions and dtsModified). */
export function withoutNulls<T extends Record<string, unknown>>(item: T): Partial<T> {
  return Object.fromEntries(Object.entries(item).filter(([, value]) => value !== null)) as Partial<T>;
}
