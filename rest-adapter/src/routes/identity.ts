import { ErrorCode } from '../../../platform/errors.js';
import { pick, RouteInputError, withoutNulls, type Route } from './route.js';

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

/** The address lists of `POST /user`, each item narrowed to the Address fields. */
function userChanges(body: unknown): Record<string, unknown> {
  const input = pick(body, USER_FIELDS);
  for (const key of ['newAddresses', 'deletedAddresses', 'addresses'] as const) {
    const list = input[key];
    if (Array.isArray(list)) input[key] = list.map((item) => (item !== null && typeof item === 'object' ? pick(item, ADDRESS_FIELDS) : item));
  }
  return input;
}

const aggregatorUser = (body: unknown): Record<string, unknown> => {
  const user = (body as { user?: unknown }).user;
  if (user === undefined || user === null) throw new RouteInputError(ErrorCode.REQUIRED_ELEMENT_MISSING, 'user is required: {"user": {"login", "password", "requestId"?}}.', 'user');
  if (typeof user !== 'object' || Array.isArray(user)) throw new RouteInputError(ErrorCode.BAD_REQUEST, 'user must be an object.', 'user');
  return user as Record<string, unknown>;
};

/** Login, profile, onboarding, alerts, geocoding and the aggregator token routes (user subgraph). */
export const IDENTITY_ROUTES: Route[] = [
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
];
