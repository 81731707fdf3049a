import { ErrorCode } from '../../platform/errors.js';
import type { Api } from './envelopes.js';
import type { UploadedFile } from './multipart.js';

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
  /** Turns the operation's data into the documented success body (envelope included for end-user routes). */
  respond: (data: Record<string, unknown>) => unknown;
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

/** The login request's documented properties; anything else in the body is ignored. */
const LOGIN_FIELDS = [
  'channel', 'userName', 'password', 'uuid', 'deviceTagOpen', 'signature', 'deviceId', 'userId', 'transportUserId',
  'transport', 'deviceTag', 'dtsValueString', 'cryptotext', 'specifics', 'deviceData',
] as const;
const USER_FIELDS = [
  'dtsModified', 'phoneNumber', 'phoneNumbers', 'mobile', 'email', 'emails', 'newAddresses', 'deletedAddresses', 'addresses',
  'firstName', 'lastName', 'languageCode', 'isMetric', 'postOnboardingStepsRequired', 'faceImage', 'homecurrency',
] as const;
const ADDRESS_FIELDS = ['SvcUserAddressId', 'addressLine1', 'addressLine2', 'city', 'state', 'postalCode', 'countryCode', 'country', 'accountType', 'isMain'] as const;

/** The documented properties of an object; anything else is ignored, as legacy clients send extras. */
function pick(body: unknown, fields: readonly string[]): Record<string, unknown> {
  if (body === null || typeof body !== 'object' || Array.isArray(body)) return {};
  const source = body as Record<string, unknown>;
  return Object.fromEntries(fields.filter((field) => source[field] !== undefined).map((field) => [field, source[field]]));
}

/** The address lists of `POST /user`, each item narrowed to the Address fields. */
function userChanges(body: unknown): Record<string, unknown> {
  const input = pick(body, USER_FIELDS);
  for (const key of ['newAddresses', 'deletedAddresses', 'addresses'] as const) {
    const list = input[key];
    if (Array.isArray(list)) input[key] = list.map((item) => (item !== null && typeof item === 'object' ? pick(item, ADDRESS_FIELDS) : item));
  }
  return input;
}

/** Drops null members the spec shows only when present (an alert's descriptions and dtsModified). */
function withoutNulls<T extends Record<string, unknown>>(item: T): Partial<T> {
  return Object.fromEntries(Object.entries(item).filter(([, value]) => value !== null)) as Partial<T>;
}

const aggregatorUser = (body: unknown): Record<string, unknown> => {
  const user = (body as { user?: unknown }).user;
  if (user === undefined || user === null) throw new RouteInputError(ErrorCode.REQUIRED_ELEMENT_MISSING, 'user is required: {"user": {"login", "password", "requestId"?}}.', 'user');
  if (typeof user !== 'object' || Array.isArray(user)) throw new RouteInputError(ErrorCode.BAD_REQUEST, 'user must be an object.', 'user');
  return user as Record<string, unknown>;
};

/** `GET /restrictions`: the spec's three members; allowedTransactionTypeNames keyed by type name. */
function restrictionsBody(data: Record<string, unknown>) {
  const me = data.me as { restrictions: Array<Record<string, unknown>>; proceduralRestrictionNames: string[] };
  const types = data.transactionTypes as Array<{ name: string } & Record<string, unknown>>;
  return {
    success: true,
    restrictions: me.restrictions.map(withoutNulls),
    proceduralRestrictionNames: me.proceduralRestrictionNames,
    allowedTransactionTypeNames: Object.fromEntries(types.map(({ name, ...rule }) => [name, withoutNulls(rule)])),
  };
}

const AGGREGATOR_LIST_FIELDS = ['customerId', 'dateCreateFrom', 'dateCreateTo', 'numberOfRecords', 'skipRecords'] as const;

/** Every route of the adapter. */
export const ROUTES: Route[] = [
  {
    method: 'PUT',
    paths: ['/token'],
    api: 'end-user',
    credential: null,
    optionalHeaders: ['x-service-key'],
    body: 'object',
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
    body: 'none',
    operation: 'logout.graphql',
    variables: () => ({}),
    respond: () => ({ success: true }),
  },
  {
    method: 'POST',
    paths: ['/user'],
    api: 'end-user',
    credential: 'token',
    body: 'object',
    operation: 'update-user.graphql',
    variables: ({ body }) => ({ input: userChanges(body) }),
    respond: (data) => data.updateUser,
  },
  {
    method: 'GET',
    paths: ['/confirm/email/:SvcUserId/:confirmationCodeEmail'],
    api: 'end-user',
    credential: 'token',
    body: 'none',
    operation: 'confirm-email.graphql',
    variables: ({ params }) => ({ SvcUserId: params.SvcUserId, code: params.confirmationCodeEmail }),
    respond: (data) => data.confirmEmail,
  },
  {
    method: 'GET',
    paths: ['/confirm/mobile/:SvcUserId/:confirmationCodeMobile'],
    api: 'end-user',
    credential: 'token',
    body: 'none',
    operation: 'confirm-mobile.graphql',
    variables: ({ params }) => ({ SvcUserId: params.SvcUserId, code: params.confirmationCodeMobile }),
    respond: (data) => data.confirmMobile,
  },
  {
    method: 'POST',
    paths: ['/prospect/data'],
    api: 'end-user',
    // Onboarding starts here: this call gives the prospect its token; with that token it updates the prospect.
    credential: null,
    optionalHeaders: ['token'],
    body: 'object',
    operation: 'prospect-data.graphql',
    variables: ({ body }) => ({ input: pick(body, ['deviceTag', 'preSegment', 'firstName', 'lastName', 'email', 'mobile', 'languageCode', 'data']) }),
    respond: (data) => data.submitProspectData,
    // The spec's Errors table: every failure of POST /prospect/data is 404.
    statuses: { [ErrorCode.REQUIRED_ELEMENT_MISSING]: 404, [ErrorCode.VALIDATION_FAILED]: 404, [ErrorCode.INTERNAL]: 404 },
  },
  {
    method: 'POST',
    paths: ['/prospect/image'],
    api: 'end-user',
    credential: 'token',
    body: 'object',
    operation: 'prospect-image.graphql',
    variables: ({ body }) => ({ input: pick(body, ['documentType', 'contentType', 'imageBase64']) }),
    respond: (data) => data.uploadProspectImage,
    statuses: { [ErrorCode.REQUIRED_ELEMENT_MISSING]: 404 },
  },
  {
    method: 'POST',
    paths: ['/prospect/registration'],
    api: 'end-user',
    credential: 'token',
    body: 'object',
    operation: 'prospect-registration.graphql',
    variables: ({ body }) => ({ input: pick(body, ['deviceTag', 'preSegment', 'deviceData', 'referral']) }),
    respond: (data) => withoutNulls(data.registerDevice as Record<string, unknown>),
    // The spec's Errors table for POST /prospect/registration.
    statuses: { [ErrorCode.REQUIRED_ELEMENT_MISSING]: 401, [ErrorCode.ACTOR_LOCKED]: 401, [ErrorCode.RECOVERY_REFUSED]: 404, [ErrorCode.INTERNAL]: 500 },
  },
  {
    method: 'POST',
    paths: ['/recovery/code'],
    api: 'end-user',
    credential: 'token',
    body: 'object',
    operation: 'recovery-code.graphql',
    variables: ({ body }) => ({ input: pick(body, ['deviceTag']) }),
    respond: (data) => data.requestRecoveryCode,
    // The spec: 404 when credentials already exist for this device.
    statuses: { [ErrorCode.CONFLICT]: 404 },
  },
  {
    method: 'POST',
    paths: ['/prospect/connectsocket'],
    api: 'end-user',
    credential: 'token',
    body: 'object',
    operation: 'connect-socket.graphql',
    variables: ({ body }) => ({ input: pick(body, ['deviceTag', 'socketId']) }),
    respond: (data) => data.connectOnboardingSocket,
    statuses: { [ErrorCode.REQUIRED_ELEMENT_MISSING]: 404, [ErrorCode.INTERNAL]: 404 },
  },
  {
    method: 'POST',
    paths: ['/alerts'],
    api: 'end-user',
    credential: 'token',
    body: 'array',
    operation: 'alerts.graphql',
    variables: ({ body }) => ({ alerts: (body as unknown[]).map((item) => (item !== null && typeof item === 'object' ? pick(item, ['alertTypeId', 'category', 'name', 'isEnabled', 'parameters']) : item)) }),
    respond: (data) => {
      const result = data.syncAlerts as { success: boolean; alerts: Array<Record<string, unknown>> };
      return { alerts: result.alerts.map(withoutNulls), success: result.success };
    },
  },
  {
    method: 'POST',
    paths: ['/geocode'],
    api: 'end-user',
    credential: 'token',
    body: 'object',
    operation: 'geocode.graphql',
    variables: ({ body }) => {
      const { address } = body as { address?: unknown };
      if (address === undefined || address === null || address === '') throw new RouteInputError(ErrorCode.REQUIRED_ELEMENT_MISSING, 'address is required.', 'address');
      return { address };
    },
    respond: (data) => ({ success: true, ...(data.geocode as object) }),
  },
  {
    method: 'POST',
    paths: ['/auth/get-token'],
    api: 'aggregator',
    credential: null,
    body: 'object',
    operation: 'aggregator-get-token.graphql',
    requestIdOf: (body) => {
      const requestId = (body as { user?: { requestId?: unknown } }).user?.requestId;
      return typeof requestId === 'string' ? requestId : undefined;
    },
    variables: ({ body }) => ({ input: pick(aggregatorUser(body), ['login', 'password', 'requestId']) }),
    respond: (data) => data.aggregatorGetToken,
    statuses: { [ErrorCode.ACTOR_LOCKED]: 401 },
  },
  {
    method: 'POST',
    paths: ['/user/change-password'],
    api: 'aggregator',
    credential: 'x-svc-token',
    body: 'object',
    operation: 'aggregator-change-password.graphql',
    variables: ({ body }) => ({ input: pick(body, ['oldPassword', 'newPassword']) }),
    respond: (data) => data.aggregatorChangePassword,
  },
  {
    method: 'GET',
    paths: ['/restrictions'],
    api: 'end-user',
    credential: 'token',
    body: 'none',
    operation: 'restrictions.graphql',
    variables: () => ({}),
    respond: restrictionsBody,
  },
  {
    method: 'POST',
    // Designed: the spec names customer initialisation without a path or shape.
    paths: ['/akepa/customer/init'],
    api: 'aggregator',
    credential: 'x-svc-token',
    body: 'object',
    operation: 'customer-init.graphql',
    variables: ({ body }) => ({ input: pick(body, ['customerId', 'type', 'reference', 'individual', 'business']) }),
    respond: (data) => data.initializeCustomer,
  },
  {
    method: 'POST',
    paths: ['/akepa/document/generate'],
    api: 'aggregator',
    credential: 'x-svc-token',
    body: 'object',
    operation: 'document-generate.graphql',
    variables: ({ body }) => ({ input: pick(body, ['customerId', 'entityId', 'documentType']) }),
    respond: (data) => data.generateDocument,
  },
  {
    method: 'POST',
    paths: ['/akepa/document/upload/:documentId'],
    api: 'aggregator',
    credential: 'x-svc-token',
    body: 'multipart',
    maxFileBytes: 5 * 1024 * 1024,
    operation: 'document-upload.graphql',
    variables: ({ params, files }) => {
      const file = files.find((f) => f.fieldName === 'file');
      if (!file) throw new RouteInputError(ErrorCode.REQUIRED_ELEMENT_MISSING, 'The file is required, in form field `file`.', 'file');
      return { input: { documentId: params.documentId, contentType: file.contentType, contentBase64: file.data.toString('base64'), fileName: file.fileName } };
    },
    respond: (data) => data.uploadDocument,
  },
  {
    method: 'POST',
    paths: ['/akepa/list'],
    api: 'aggregator',
    credential: 'x-svc-token',
    body: 'object',
    operation: 'applications-list.graphql',
    variables: ({ body }) => ({ input: pick(body, AGGREGATOR_LIST_FIELDS) }),
    respond: (data) => data.applications,
  },
  {
    method: 'POST',
    paths: ['/akepa/update'],
    api: 'aggregator',
    credential: 'x-svc-token',
    body: 'object',
    operation: 'application-update.graphql',
    variables: ({ body }) => {
      const input = pick(body, ['customerId', 'applicationId', 'documents']);
      if (Array.isArray(input.documents)) input.documents = input.documents.map((doc) => (doc !== null && typeof doc === 'object' ? pick(doc, ['entityId', 'documentId', 'view']) : doc));
      return { input };
    },
    respond: (data) => data.updateApplication,
  },
  {
    method: 'POST',
    paths: ['/transfer-to/ach/return-rates'],
    api: 'aggregator',
    credential: 'x-svc-token',
    body: 'object',
    operation: 'ach-return-rates.graphql',
    variables: ({ body }) => ({ input: pick(body, ['date', 'numberOfRecords', 'skipRecords']) }),
    respond: (data) => data.achReturnRates,
  },
  {
    method: 'POST',
    paths: ['/cards/:SvcCardId'],
    api: 'end-user',
    credential: 'token',
    body: 'object',
    operation: 'card-modify.graphql',
    // Only name and isMain change; any other property in the body is ignored.
    variables: ({ params, body }) => ({ SvcCardId: params.SvcCardId, input: pick(body, ['name', 'isMain']) }),
    respond: (data) => data.modifyCard,
  },
  {
    method: 'POST',
    paths: ['/cards/:SvcCardId/:onoff'],
    api: 'end-user',
    credential: 'token',
    body: 'none',
    operation: 'card-onoff.graphql',
    variables: ({ params }) => ({ SvcCardId: params.SvcCardId, onoff: params.onoff }),
    respond: (data) => data.setCardStatus,
  },
  {
    method: 'POST',
    paths: ['/ibis-sandbox/webhook/init'],
    api: 'aggregator',
    credential: 'x-svc-token',
    body: 'object',
    operation: 'sandbox.graphql',
    variables: ({ body }) => ({ input: pick(body, ['svcCardId', 'sandBoxCases']) }),
    respond: (data) => (data.runWebhookSandbox as Array<{ responseData: Record<string, unknown> }>).map((result) => ({ ...result, responseData: withoutNulls(result.responseData) })),
  },
  {
    method: 'POST',
    paths: ['/condor/card/add'],
    api: 'aggregator',
    credential: 'x-svc-token',
    body: 'object',
    operation: 'condor-card-add.graphql',
    variables: ({ body }) => ({ input: pick(body, ['customerId', 'cardAttributes']) }),
    respond: (data) => data.addCondorCard,
  },
];
