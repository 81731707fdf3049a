import { ErrorCode } from '../../platform/errors.js';
import type { Api } from './envelopes.js';

/** The credential header a route takes. */
export type Credential = 'token' | 'x-svc-token' | 'x-svc-jwtoken';

/** What a route's mapping functions see of the HTTP request. */
export interface RouteInput {
  params: Record<string, string>;
  body: unknown;
  query: URLSearchParams;
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
  /** Whether the route reads a JSON body (a body that is not JSON answers 400). */
  hasBody: boolean;
  /** File name in `operations/`. */
  operation: string;
  variables: (input: RouteInput) => Record<string, unknown>;
  /** Turns the operation's data into the documented success body (envelope included for end-user routes). */
  respond: (data: Record<string, unknown>) => unknown;
  /** Route-specific statuses by error code, over the defaults. */
  statuses?: Partial<Record<string, number>>;
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
  [ErrorCode.CONFLICT]: 409,
  [ErrorCode.UNAVAILABLE]: 503,
  [ErrorCode.INTERNAL]: 500,
};

/** The login request's documented properties; anything else in the body is ignored. */
const LOGIN_FIELDS = [
  'channel', 'userName', 'password', 'uuid', 'deviceTagOpen', 'signature', 'deviceId', 'userId', 'transportUserId',
  'transport', 'deviceTag', 'dtsValueString', 'cryptotext', 'specifics', 'deviceData',
] as const;

function pick(body: unknown, fields: readonly string[]): Record<string, unknown> {
  const source = body as Record<string, unknown>;
  return Object.fromEntries(fields.filter((field) => source[field] !== undefined).map((field) => [field, source[field]]));
}

/** Every route of the adapter. */
export const ROUTES: Route[] = [
  {
    method: 'PUT',
    paths: ['/token'],
    api: 'end-user',
    credential: null,
    hasBody: true,
    operation: 'login.graphql',
    variables: ({ body }) => ({ input: pick(body, LOGIN_FIELDS) }),
    respond: (data) => data.login,
    // The spec's Errors table for PUT /token.
    statuses: {
      [ErrorCode.REQUIRED_ELEMENT_MISSING]: 404,
      [ErrorCode.CHANNEL_NOT_PERMITTED]: 404,
      [ErrorCode.CHANNEL_PROPERTY_MISSING]: 401,
      [ErrorCode.INVALID_TIMESTAMP]: 401,
      [ErrorCode.ACTOR_LOCKED]: 401,
      [ErrorCode.UNAUTHENTICATED]: 401,
      [ErrorCode.INVALID_CHANNEL]: 500,
      [ErrorCode.UNAVAILABLE]: 500,
    },
  },
  {
    method: 'DELETE',
    paths: ['/token'],
    api: 'end-user',
    credential: 'token',
    // The spec: DELETE /token answers 500 when no token is sent.
    missingCredentialStatus: 500,
    hasBody: false,
    operation: 'logout.graphql',
    variables: () => ({}),
    respond: () => ({ success: true }),
  },
];
