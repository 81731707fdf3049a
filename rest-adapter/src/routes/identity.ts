import { DEMO } from '../../../platform/domain/demo.js';
import { ErrorCode } from '../../../platform/contracts/errors.js';
import { DEVICE_TAG_RULE, NEW_PASSWORD_RULES } from '../../../platform/security/validate.js';
import { FIELD } from '../contract/fields.js';
import { arrayOf, nullable, object, omittingNulls, stringOf, type JsonSchema } from '../contract/json-schema.js';
import { graphEnumValues, graphInputFieldNames } from '../contract/api-schema.js';
import { pick, rootField, RouteInputError, withoutNulls, type Route } from './route.js';
import { ALERT, conditionalMembers, fieldsOf, LOGIN, listOf, TOKEN_RESULT, USER } from './documented.js';

const DEVICE_TAG: JsonSchema = stringOf(DEVICE_TAG_RULE, DEVICE_TAG_RULE.patternText);
const ADDRESS_LINE: JsonSchema = {
  type: 'string',
  minLength: 1,
  maxLength: 100,
  pattern: '^(?!\\s*$)[^<>]*$',
  description: '1-100 characters, no < or >',
};
/** The Address properties `POST /user` reads from each item of its address lists. */
const ADDRESS_FIELDS: Record<string, JsonSchema> = {
  addressLine1: ADDRESS_LINE,
  addressLine2: { type: 'string', maxLength: 100 },
  city: ADDRESS_LINE,
  state: ADDRESS_LINE,
  postalCode: {
    type: 'string',
    minLength: 1,
    maxLength: 12,
    pattern: '^[A-Za-z0-9 -]+$',
    description: '1-12 letters, digits, spaces or dashes',
  },
  countryCode: { type: 'string', description: '3-letter ISO 3166-1 alpha-3 for checking/savings accounts, 2-letter for debit cards' },
  country: { type: 'string', description: 'ISO 3166-1 country code, alpha-2 or alpha-3' },
  accountType: FIELD.string,
  isMain: FIELD.boolean,
  SvcUserAddressId: FIELD.string,
};
/** An item of newAddresses: the four lines and a country code. */
const ADDRESS_CHANGE: JsonSchema = object(ADDRESS_FIELDS, ['addressLine1', 'city', 'state', 'postalCode'], {
  description: 'Also needs countryCode or country.',
});
/** An item of deletedAddresses: the address's id, or its four lines and country code. */
const ADDRESS_DELETION: JsonSchema = object(ADDRESS_FIELDS, [], {
  description: 'By SvcUserAddressId, or by addressLine1, city, state, postalCode and countryCode or country.',
  anyOf: [{ required: ['SvcUserAddressId'] }, { required: ['addressLine1', 'city', 'state', 'postalCode'] }],
});

/** `POST /alerts`: "alerts (array of Alert, the full current list) and success". */
const ALERTS_ANSWER = fieldsOf(['alerts', 'success'], { nested: { alerts: listOf(ALERT) } });
/** `POST /user` ("success, user"), and the designed confirmations that answer the same. */
const USER_ANSWER = fieldsOf(['success', 'user'], { nested: { user: USER } });
/** The designed registration answer shows the browser's deviceId and the segment only when there is one. */
const REGISTRATION_SHOWN_WHEN_PRESENT = ['deviceId', 'segment'] as const;

/** The login request's documented properties, LoginInput's fields; anything else in the body is ignored. */
const LOGIN_FIELDS = graphInputFieldNames('LoginInput');
const USER_FIELDS = [
  'dtsModified',
  'phoneNumber',
  'phoneNumbers',
  'mobile',
  'email',
  'emails',
  'newAddresses',
  'deletedAddresses',
  'addresses',
  'firstName',
  'lastName',
  'languageCode',
  'isMetric',
  'postOnboardingStepsRequired',
  'faceImage',
  'homecurrency',
] as const;

/** The address lists of `POST /user`, each item narrowed to the Address fields. */
function userChanges(body: unknown): Record<string, unknown> {
  const input = pick(body, USER_FIELDS);
  for (const key of ['newAddresses', 'deletedAddresses', 'addresses'] as const) {
    const list = input[key];
    if (Array.isArray(list))
      input[key] = (list as unknown[]).map((item) =>
        item !== null && typeof item === 'object' ? pick(item, Object.keys(ADDRESS_FIELDS)) : item,
      );
  }
  return input;
}

const aggregatorUser = (body: unknown): Record<string, unknown> => {
  const user = (body as { user?: unknown }).user;
  if (user === undefined || user === null)
    throw new RouteInputError(
      ErrorCode.REQUIRED_ELEMENT_MISSING,
      'user is required: {"user": {"login", "password", "requestId"?}}.',
      'user',
    );
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
    summary: 'Log in over one of the ten channels and get a session token',
    requestSchema: object(
      {
        channel: { type: 'string', enum: graphEnumValues('LoginChannel') },
        userName: FIELD.string,
        password: FIELD.string,
        uuid: { type: 'string', description: 'device UUID, 36 characters (digits, letters, dashes)' },
        deviceTagOpen: FIELD.string,
        signature: FIELD.string,
        deviceId: FIELD.string,
        userId: FIELD.string,
        transportUserId: FIELD.string,
        transport: FIELD.string,
        deviceTag: FIELD.string,
        dtsValueString: { type: 'string', description: 'ISO 8601 date-time of the request; badly formatted is 401' },
        cryptotext: FIELD.string,
        specifics: FIELD.object,
        deviceData: FIELD.object,
      },
      ['channel'],
      {
        description:
          "The properties each channel requires are in the spec's Login request table; one that is missing is 401 (CHANNEL_PROPERTY_MISSING).",
      },
    ),
    // The spec: an invalid channel is 500.
    requestErrorCodes: { 'channel:enum': ErrorCode.INVALID_CHANNEL },
    responseSchema: rootField('login'),
    documentedResponse: LOGIN,
    example: { body: { channel: 'internet', userName: DEMO.userName, password: DEMO.password } },
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
    // Not in the spec: every slot of the actor's lockout is taken by logins in flight (429, Retry-After).
    errorCodes: [ErrorCode.TOO_MANY_ATTEMPTS],
  },
  {
    method: 'DELETE',
    paths: ['/token'],
    api: 'end-user',
    credential: 'token',
    // The spec: DELETE /token answers 500 when no token is sent.
    missingCredentialStatus: 500,
    body: 'none',
    summary: 'Log out: the token stops working',
    designed: 'the response body `{success: true}` (the spec gives no content).',
    responseSchema: () => object({ success: { const: true } }, ['success'], { additionalProperties: false }),
    documentedResponse: null,
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
    summary: 'Change elements of the logged-in user',
    requestSchema: object({
      dtsModified: nullable({ type: 'string', maxLength: 64 }),
      phoneNumber: nullable(FIELD.phone),
      phoneNumbers: arrayOf(FIELD.phone, { maxItems: 10 }),
      mobile: nullable(FIELD.phone),
      email: nullable(FIELD.email),
      emails: arrayOf(FIELD.email, { maxItems: 10 }),
      newAddresses: arrayOf(ADDRESS_CHANGE, { maxItems: 10, description: 'A user keeps at most 10 addresses in all.' }),
      deletedAddresses: arrayOf(ADDRESS_DELETION, { maxItems: 10 }),
      addresses: arrayOf(FIELD.object, { maxItems: 10, description: 'A user keeps at most 10 addresses in all.' }),
      firstName: { type: 'string', minLength: 1, maxLength: 100 },
      lastName: { type: 'string', minLength: 1, maxLength: 100 },
      languageCode: { type: 'string', pattern: '^[a-z]{2,3}(-[A-Za-z0-9]{2,8})?$', description: 'a language code such as en or en-US' },
      isMetric: FIELD.boolean,
      postOnboardingStepsRequired: nullable({ type: 'string', maxLength: 100 }),
      faceImage: nullable({ type: 'string', maxLength: 500 }),
      homecurrency: FIELD.currency,
    }),
    responseSchema: rootField('updateUser'),
    documentedResponse: USER_ANSWER,
    errorCodes: [ErrorCode.CONFLICT, ErrorCode.NOT_FOUND],
    example: {
      body: {
        mobile: '+12125550123',
        newAddresses: [{ addressLine1: '1 Main St', city: 'Springfield', state: 'IL', postalCode: '62701', country: 'US' }],
      },
    },
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
    summary: "Confirm the user's email address with the code sent to it",
    designed:
      'the response `{success, user}`; a wrong or expired code is 400 (CODE_INVALID), an address already confirmed 404 as the spec says.',
    responseSchema: rootField('confirmEmail'),
    documentedResponse: USER_ANSWER,
    errorCodes: [ErrorCode.CODE_INVALID, ErrorCode.NOT_FOUND, ErrorCode.TOO_MANY_ATTEMPTS],
    example: { params: { SvcUserId: DEMO.userId, confirmationCodeEmail: '123456' } },
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
    summary: "Confirm the user's mobile number with the code sent to it",
    designed:
      'the response `{success, user}`; a wrong or expired code is 400 (CODE_INVALID), a number already confirmed 404 as the spec says.',
    responseSchema: rootField('confirmMobile'),
    documentedResponse: USER_ANSWER,
    errorCodes: [ErrorCode.CODE_INVALID, ErrorCode.NOT_FOUND, ErrorCode.TOO_MANY_ATTEMPTS],
    example: { params: { SvcUserId: DEMO.userId, confirmationCodeMobile: '123456' } },
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
    summary: "Record a prospect's data; the first call gives the prospect its token",
    designed:
      "request `{deviceTag, preSegment, firstName?, lastName?, email?, mobile?, languageCode?, data?}` and response `{success, token, prospectId, ...}`. The failures of the spec's error table (missing or bad parameters, failed storing) are 404; besides them, an invalid `token` header is 401 and a device or prospect already registered is 409.",
    requestSchema: object(
      {
        deviceTag: DEVICE_TAG,
        preSegment: { type: 'string', maxLength: 64 },
        firstName: nullable(FIELD.string),
        lastName: nullable(FIELD.string),
        email: nullable(FIELD.email),
        mobile: nullable(FIELD.phone),
        languageCode: nullable(FIELD.string),
        data: nullable(FIELD.object),
      },
      ['deviceTag', 'preSegment'],
    ),
    responseSchema: rootField('submitProspectData'),
    documentedResponse: null,
    errorCodes: [ErrorCode.UNAUTHENTICATED, ErrorCode.CONFLICT],
    example: { body: { deviceTag: 'new-device-tag-1', preSegment: 'retail', firstName: 'Pat', email: 'pat@example.com' } },
    operation: 'prospect-data.graphql',
    variables: ({ body }) => ({
      input: pick(body, ['deviceTag', 'preSegment', 'firstName', 'lastName', 'email', 'mobile', 'languageCode', 'data']),
    }),
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
    // A 2 MiB image (the user subgraph's limit, 413 beyond) in base64, with room to spare, so that the subgraph's answer names the field.
    maxBodyBytes: 4 * 1024 * 1024,
    summary: 'Upload a document image of the prospect (base64)',
    designed: 'request `{documentType, contentType, imageBase64}` and response `{success, imageId}`.',
    requestSchema: object(
      {
        documentType: { type: 'string', enum: graphEnumValues('ProspectDocumentType') },
        contentType: { type: 'string', description: 'image/png or image/jpeg (415 otherwise)' },
        imageBase64: { type: 'string', contentEncoding: 'base64' },
      },
      ['documentType', 'contentType', 'imageBase64'],
    ),
    responseSchema: rootField('uploadProspectImage'),
    documentedResponse: null,
    errorCodes: [ErrorCode.UNSUPPORTED_MEDIA_TYPE],
    example: { body: { documentType: 'passport', contentType: 'image/png', imageBase64: 'iVBORw0KGgo=' } },
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
    summary: 'Register a device for a prospect, or for an existing user who recovers access',
    designed: 'the response: `{success, SvcUserId, serverSecret, ...}` (the device secret, shown once).',
    requestSchema: object(
      {
        deviceTag: DEVICE_TAG,
        preSegment: { type: 'string', maxLength: 64 },
        deviceData: { type: 'object', description: 'extra properties allowed' },
        referral: nullable(FIELD.string),
      },
      ['deviceTag', 'preSegment', 'deviceData'],
    ),
    graphRefusesMissing: true,
    responseSchema: (fields) => omittingNulls(rootField('registerDevice')(fields), REGISTRATION_SHOWN_WHEN_PRESENT),
    documentedResponse: null,
    errorCodes: [ErrorCode.CONFLICT, ErrorCode.CODE_INVALID, ErrorCode.NOT_FOUND, ErrorCode.TOO_MANY_ATTEMPTS],
    example: { body: { deviceTag: 'new-device-tag-1', preSegment: 'retail', deviceData: { model: 'Pixel 8' } } },
    operation: 'prospect-registration.graphql',
    variables: ({ body }) => ({ input: pick(body, ['deviceTag', 'preSegment', 'deviceData', 'referral']) }),
    respond: (data) => withoutNulls(data.registerDevice as Record<string, unknown>, REGISTRATION_SHOWN_WHEN_PRESENT),
    // The spec's Errors table for POST /prospect/registration.
    statuses: {
      [ErrorCode.REQUIRED_ELEMENT_MISSING]: 401,
      [ErrorCode.ACTOR_LOCKED]: 401,
      [ErrorCode.RECOVERY_REFUSED]: 404,
      [ErrorCode.INTERNAL]: 500,
    },
  },
  {
    method: 'POST',
    paths: ['/recovery/code'],
    api: 'end-user',
    credential: 'token',
    body: 'object',
    summary: 'Send a recovery code to the user who recovers access on a new device',
    designed: 'request `{deviceTag}` and response `{success}`; the code goes by SMS or email.',
    requestSchema: object({ deviceTag: DEVICE_TAG }, ['deviceTag']),
    responseSchema: rootField('requestRecoveryCode'),
    documentedResponse: null,
    errorCodes: [ErrorCode.NOT_FOUND],
    example: { body: { deviceTag: 'new-device-tag-1' } },
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
    summary: 'Record the socket an onboarding device listens on',
    designed: 'request `{deviceTag, socketId}` and response `{success}`.',
    requestSchema: object(
      { deviceTag: DEVICE_TAG, socketId: { type: 'string', minLength: 1, maxLength: 128, pattern: '^(?!\\s*$)[^<>]*$' } },
      ['deviceTag', 'socketId'],
    ),
    responseSchema: rootField('connectOnboardingSocket'),
    documentedResponse: null,
    example: { body: { deviceTag: 'new-device-tag-1', socketId: 'socket_1' } },
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
    summary: 'Synchronise alert subscriptions between device and server',
    requestSchema: arrayOf(
      object(
        {
          alertTypeId: { type: 'string', maxLength: 64 },
          category: nullable({ type: 'string', maxLength: 64 }),
          name: nullable({ type: 'string', maxLength: 100 }),
          isEnabled: nullable(FIELD.boolean),
          parameters: nullable(FIELD.object),
        },
        ['alertTypeId'],
      ),
      { maxItems: 20 },
    ),
    responseSchema: (fields) => {
      const result = rootField('syncAlerts')(fields) as { properties: { alerts: { items: JsonSchema } } };
      return object(
        { alerts: arrayOf(omittingNulls(result.properties.alerts.items, conditionalMembers(ALERT))), success: FIELD.boolean },
        ['alerts', 'success'],
        { additionalProperties: false },
      );
    },
    documentedResponse: ALERTS_ANSWER,
    example: {
      body: [
        { alertTypeId: 'alert1', isEnabled: true },
        { alertTypeId: 'summaryReportsMonthly', isEnabled: false },
      ],
    },
    operation: 'alerts.graphql',
    variables: ({ body }) => ({
      alerts: (body as unknown[]).map((item) =>
        item !== null && typeof item === 'object' ? pick(item, ['alertTypeId', 'category', 'name', 'isEnabled', 'parameters']) : item,
      ),
    }),
    respond: (data) => {
      const result = data.syncAlerts as { success: boolean; alerts: Array<Record<string, unknown>> };
      return { alerts: result.alerts.map((alert) => withoutNulls(alert, conditionalMembers(ALERT))), success: result.success };
    },
  },
  {
    method: 'POST',
    paths: ['/geocode'],
    api: 'end-user',
    credential: 'token',
    body: 'object',
    summary: 'Geocode an address string (offline, US and world cities)',
    designed: "the response `{success, ...}` with the best match's coordinates and parts; nothing found is a success with no candidates.",
    requestSchema: object(
      {
        address: { type: 'string', minLength: 1, maxLength: 200, pattern: '^(?!\\s*$)[^<>]*$', description: '1-200 characters, no < or >' },
      },
      ['address'],
    ),
    responseSchema: (fields) => {
      const result = rootField('geocode')(fields);
      return {
        ...result,
        properties: { success: { const: true }, ...(result.properties as object) },
        required: ['success', ...(result.required as string[])],
      };
    },
    documentedResponse: null,
    example: { body: { address: '1600 Pennsylvania Ave NW, Washington, DC 20500' } },
    operation: 'geocode.graphql',
    variables: ({ body }) => {
      const { address } = body as { address?: unknown };
      if (address === undefined || address === null || address === '')
        throw new RouteInputError(ErrorCode.REQUIRED_ELEMENT_MISSING, 'address is required.', 'address');
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
    summary: 'Get an aggregator token (base, with a confined one that may only read)',
    requestSchema: object(
      {
        user: object(
          {
            login: FIELD.id,
            password: { type: 'string', minLength: 1, maxLength: 50 },
            requestId: { type: 'string', minLength: 1, maxLength: 32, pattern: '^(?!\\s*$)[^<>]*$' },
          },
          ['login', 'password'],
        ),
      },
      ['user'],
    ),
    responseSchema: rootField('aggregatorGetToken'),
    documentedResponse: TOKEN_RESULT,
    errorCodes: [ErrorCode.UNAUTHENTICATED, ErrorCode.TOO_MANY_ATTEMPTS],
    example: { body: { user: { login: DEMO.aggregatorLogin, password: DEMO.aggregatorPassword, requestId: 'req1' } } },
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
    summary: "Change the logged-in aggregator user's password",
    designed: 'the response data `{success: true}`; every token of the user is revoked, so the next call logs in again.',
    requestSchema: object(
      {
        oldPassword: { type: 'string', minLength: 1, maxLength: 50 },
        newPassword: {
          type: 'string',
          minLength: 8,
          maxLength: 50,
          allOf: NEW_PASSWORD_RULES.map((rule) => ({ pattern: rule.pattern.source, description: rule.message })),
          description:
            'letters, digits and ! @ # $ % ^ &, with at least one digit, one of those symbols, one lowercase and one uppercase letter',
        },
      },
      ['oldPassword', 'newPassword'],
    ),
    responseSchema: rootField('aggregatorChangePassword'),
    documentedResponse: null,
    errorCodes: [ErrorCode.FORBIDDEN, ErrorCode.CONFLICT, ErrorCode.TOO_MANY_ATTEMPTS],
    example: { body: { oldPassword: DEMO.aggregatorPassword, newPassword: 'New#Pass2027' } },
    operation: 'aggregator-change-password.graphql',
    variables: ({ body }) => ({ input: pick(body, ['oldPassword', 'newPassword']) }),
    respond: (data) => data.aggregatorChangePassword,
  },
];
