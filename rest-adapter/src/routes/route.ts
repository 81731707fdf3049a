import { ErrorCode } from '../../../platform/contracts/errors.js';
import type { Api } from '../envelopes.js';
import type { JsonSchema } from '../contract/json-schema.js';
import type { DocumentedShape } from './documented.js';
import { CREDENTIAL_ISSUING_FIELDS } from '../../../platform/contracts/principal.js';
import { loadOperation } from '../operations.js';
import { ownValue } from '../../../platform/contracts/own.js';

/** One uploaded file of a multipart/form-data body. */
export interface UploadedFile {
  fieldName: string;
  fileName: string;
  contentType: string;
  data: Buffer;
}

/** The credential header a route takes. */
type Credential = 'token' | 'x-svc-token' | 'x-svc-jwtoken';

/** What a route's mapping functions see of the HTTP request. */
export interface RouteInput {
  params: Record<string, string>;
  body: unknown;
  query: URLSearchParams;
  /** The files of a multipart route. */
  files: UploadedFile[];
}

/** A query parameter of a route. */
interface QueryParameter {
  schema: JsonSchema;
  required: boolean;
  description: string;
}

/**
 * One documented endpoint: path and aliases → GraphQL operation → documented envelope and
 * status. The same entry generates the OpenAPI document, validates requests and builds the
 * request collection, so none of them can drift from what the adapter does.
 */
export interface Route {
  method: 'GET' | 'PUT' | 'POST' | 'DELETE';
  /** The documented path and its aliases, with `:name` parameters. */
  paths: string[];
  api: Api;
  /** One line for the API reference. */
  summary: string;
  /** Where the spec says "not shown": what the project designed (the reference marks it as designed). */
  designed?: string;
  /** JSON Schema of a JSON request body, checked before any GraphQL call; properties it does not name are ignored. */
  requestSchema?: JsonSchema;
  /** Schemas of the path parameters that have a documented rule (others are any one path segment). */
  paramSchemas?: Record<string, JsonSchema>;
  /** Query parameters the route reads. */
  queryParameters?: Record<string, QueryParameter>;
  /**
   * Missing required properties are passed on to the graph instead of refused here, because
   * the graph's refusal does something the spec requires (POST /prospect/registration locks the actor).
   */
  graphRefusesMissing?: boolean;
  /** Error codes of request-schema failures other than the defaults, by field and JSON Schema keyword (`channel:enum`). */
  requestErrorCodes?: Record<string, ErrorCode>;
  /** Schema of the success payload (inside the aggregator envelope), given the operation's root fields' schemas. */
  responseSchema: (fields: Record<string, JsonSchema>) => JsonSchema;
  /**
   * What the spec lists of the success payload (inside the aggregator envelope), from the
   * resources in `documented.ts`: its fields are in every answer, null when they have no value,
   * unless the spec marks them optional or conditional. null where the spec shows no response
   * (the route's `designed` says what the project chose) or the payload is none of its resources.
   */
  documentedResponse: DocumentedShape | null;
  /** Error codes the route's operation answers besides the ones every route of its kind answers (see `routeErrorCodes`) and the keys of `statuses`. */
  errorCodes?: ErrorCode[];
  /** A request made of the demo data, for the reference and the collection. */
  example?: { params?: Record<string, string>; query?: Record<string, string>; body?: unknown };
  /** The credential header the route requires; null when it takes none. */
  credential: Credential | null;
  /** Status when the credential header is absent (401 unless the spec says otherwise). */
  missingCredentialStatus?: number;
  /** The body the route reads: a JSON object or array, a multipart/form-data upload, or none (any other body answers 400). */
  body: 'object' | 'array' | 'multipart' | 'none';
  /** For multipart routes: the largest file accepted. */
  maxFileBytes?: number;
  /** For JSON routes: the largest body read; JSON_BODY_LIMIT_BYTES when absent (a route whose body carries a file in base64 says more). */
  maxBodyBytes?: number;
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
  constructor(
    readonly code: ErrorCode,
    message: string,
    readonly field?: string,
  ) {
    super(message);
  }
}

/** Statuses of error codes on every route, unless the route says otherwise. */
const DEFAULT_STATUSES: Record<string, number> = {
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
  [ErrorCode.TOO_MANY_ATTEMPTS]: 429,
  [ErrorCode.OPERATION_LIMIT_EXCEEDED]: 400,
  [ErrorCode.OPERATION_NOT_TRUSTED]: 400,
  [ErrorCode.PERSISTED_QUERY_HASH_MISMATCH]: 400,
  [ErrorCode.IDEMPOTENCY_KEY_REUSED]: 422,
  [ErrorCode.UNAVAILABLE]: 503,
  [ErrorCode.INTERNAL]: 500,
};

/** The documented properties of an object; anything else is ignored, as legacy clients send extras. */
export function pick(body: unknown, fields: readonly string[]): Record<string, unknown> {
  if (body === null || typeof body !== 'object' || Array.isArray(body)) return {};
  const source = body as Record<string, unknown>;
  return Object.fromEntries(fields.filter((field) => source[field] !== undefined).map((field) => [field, source[field]]));
}

/**
 * Drops the members `names` when they are null: the ones an answer shows only when present (an
 * alert's descriptions and dtsModified, from `conditionalMembers`). Every other member stays, null
 * or not, as strict decoders need the keys the spec lists.
 */
export function withoutNulls<T extends Record<string, unknown>>(item: T, names: readonly string[]): Partial<T> {
  return Object.fromEntries(Object.entries(item).filter(([name, value]) => value !== null || !names.includes(name))) as Partial<T>;
}

const keyed = new Map<string, boolean>();
/**
 * Whether a route takes an Idempotency-Key: its operation is a mutation (it changes state) that
 * does not issue a credential (whose answer is never kept).
 */
export function changesState(route: Route): boolean {
  let known = keyed.get(route.operation);
  if (known === undefined) {
    const text = loadOperation(route.operation);
    const rootField = /^\s*mutation\b[^{]*\{\s*(\w+)/m.exec(text)?.[1];
    known = rootField !== undefined && !CREDENTIAL_ISSUING_FIELDS.has(rootField);
    keyed.set(route.operation, known);
  }
  return known;
}

/** Whether a route reads anything from the request besides its credential. */
const takesInput = (route: Route) =>
  route.body !== 'none' || route.paths.some((p) => p.includes('/:')) || route.queryParameters !== undefined;

/**
 * Every error code a route answers: BAD_REQUEST, VALIDATION_FAILED and REQUIRED_ELEMENT_MISSING
 * where it takes input; TOKEN_MISSING and UNAUTHENTICATED where it takes a credential;
 * PAYLOAD_TOO_LARGE for bodies (UNSUPPORTED_MEDIA_TYPE for files); RATE_LIMITED, UNAVAILABLE
 * and INTERNAL everywhere; the codes of its own error table (`statuses`) and its `errorCodes`.
 */
export function routeErrorCodes(route: Route): string[] {
  const codes: string[] = [];
  if (takesInput(route)) codes.push(ErrorCode.BAD_REQUEST, ErrorCode.VALIDATION_FAILED, ErrorCode.REQUIRED_ELEMENT_MISSING);
  if (route.credential) codes.push(ErrorCode.TOKEN_MISSING, ErrorCode.UNAUTHENTICATED);
  if (route.body !== 'none') codes.push(ErrorCode.PAYLOAD_TOO_LARGE);
  if (route.body === 'multipart') codes.push(ErrorCode.UNSUPPORTED_MEDIA_TYPE);
  // A route that changes state takes an Idempotency-Key: reused with another body 422, still in progress 409.
  if (changesState(route)) codes.push(ErrorCode.IDEMPOTENCY_KEY_REUSED, ErrorCode.CONFLICT);
  // Every route is rate limited at the gateway (429 with Retry-After).
  codes.push(
    ErrorCode.RATE_LIMITED,
    ErrorCode.UNAVAILABLE,
    ErrorCode.INTERNAL,
    ...Object.keys(route.statuses ?? {}),
    ...(route.errorCodes ?? []),
  );
  return [...new Set(codes)];
}

/** The status a route (or, before a route is known, any route) answers an error code with. */
export function statusOfCode(route: Route | null, code: string, fallback = 500): number {
  if (code === (ErrorCode.TOKEN_MISSING as string) && route?.missingCredentialStatus) return route.missingCredentialStatus;
  return (route?.statuses && ownValue(route.statuses, code)) ?? ownValue(DEFAULT_STATUSES, code) ?? fallback;
}

/** Every status a route answers: 200 and the statuses of its error codes. */
export function documentedStatuses(route: Route): number[] {
  return [...new Set([200, ...routeErrorCodes(route).map((code) => statusOfCode(route, code))])].sort((a, b) => a - b);
}

/** The error codes that answer with `status` on this route. */
export function codesOfStatus(route: Route, status: number): string[] {
  return routeErrorCodes(route).filter((code) => statusOfCode(route, code) === status);
}

/** The schema of one root field of the route's operation, as its success payload. */
export function rootField(name: string): (fields: Record<string, JsonSchema>) => JsonSchema {
  return (fields) => {
    const schema = fields[name];
    if (!schema) throw new Error(`the operation selects no ${name}`);
    return schema;
  };
}

/** The largest JSON body a route reads unless it says otherwise: every documented body but a base64 image is a few kilobytes. */
export const JSON_BODY_LIMIT_BYTES = 256 * 1024;
