import { ErrorCode } from '../../../platform/contracts/errors.js';
import { FIELD } from '../contract/fields.js';
import { arrayOf, object, omittingNulls, type JsonSchema } from '../contract/json-schema.js';
import { graphEnumValues } from '../contract/api-schema.js';
import { pick, rootField, withoutNulls, type Route } from './route.js';
import { CARD, CARD_ADD_RESULT, conditionalMembers, fieldsOf, listOf, SANDBOX_RESPONSE_DATA, SANDBOX_RESULT } from './documented.js';

/** `POST /cards/:SvcCardId/:onoff`: "success, status, isActive, card (Card), userId". */
const CARD_STATUS_ANSWER = fieldsOf(['success', 'status', 'isActive', 'card', 'userId'], { nested: { card: CARD } });

/** Card management, the webhook sandbox and the deprecated card-add (cards subgraph). */
export const CARD_ROUTES: Route[] = [
  {
    method: 'POST',
    paths: ['/cards/:SvcCardId'],
    api: 'end-user',
    summary: 'Modify a card: only name and isMain change',
    designed:
      "the response: `{success, card, userId}`, the card after the change. Other properties in the body are ignored, not applied; making a card main makes the user's other cards not main.",
    credential: 'token',
    body: 'object',
    requestSchema: object({
      name: { type: 'string', maxLength: 50, pattern: '^(?!\\s*$)[^<>]*$', description: 'at most 50 characters, no < or >' },
      isMain: FIELD.boolean,
    }),
    operation: 'card-modify.graphql',
    // Only name and isMain change; any other property in the body is ignored.
    variables: ({ params, body }) => ({ SvcCardId: params.SvcCardId, input: pick(body, ['name', 'isMain']) }),
    respond: (data) => data.modifyCard,
    responseSchema: rootField('modifyCard'),
    // Designed as {success, card, userId}; the card is the spec's Card.
    documentedResponse: fieldsOf(['success', 'card', 'userId'], { nested: { card: CARD } }),
    errorCodes: [ErrorCode.NOT_FOUND],
    example: { params: { SvcCardId: 'demo_card_1' }, body: { name: 'Groceries', isMain: true } },
  },
  {
    method: 'POST',
    paths: ['/cards/:SvcCardId/:onoff'],
    api: 'end-user',
    summary: 'Turn a card on (active) or off (blocked: no transaction is authorized)',
    credential: 'token',
    body: 'none',
    paramSchemas: { onoff: { type: 'string', enum: graphEnumValues('CardSwitch') } },
    operation: 'card-onoff.graphql',
    variables: ({ params }) => ({ SvcCardId: params.SvcCardId, onoff: params.onoff }),
    respond: (data) => data.setCardStatus,
    responseSchema: rootField('setCardStatus'),
    documentedResponse: CARD_STATUS_ANSWER,
    errorCodes: [ErrorCode.NOT_FOUND],
    example: { params: { SvcCardId: 'demo_card_2', onoff: 'on' } },
  },
  {
    method: 'POST',
    paths: ['/ibis-sandbox/webhook/init'],
    api: 'aggregator',
    summary: 'Run the card-authorization webhook sandbox against a test card',
    designed:
      'the test catalogue (t001_01 … t005_01: each message kind, a decline and a timeout) and the errors: a card that is not a test card is 400, no webhook URL or default strategy arranged is 409.',
    credential: 'x-svc-token',
    body: 'object',
    requestSchema: object(
      {
        svcCardId: FIELD.id,
        sandBoxCases: arrayOf(
          { type: 'string', pattern: '^t[0-9]{3}_[0-9]{2}$', description: 'test and case, such as t002_01' },
          { maxItems: 20 },
        ),
      },
      ['svcCardId'],
    ),
    operation: 'sandbox.graphql',
    variables: ({ body }) => ({ input: pick(body, ['svcCardId', 'sandBoxCases']) }),
    respond: (data) =>
      (data.runWebhookSandbox as Array<{ responseData: Record<string, unknown> }>).map((result) => ({
        ...result,
        responseData: withoutNulls(result.responseData, conditionalMembers(SANDBOX_RESPONSE_DATA)),
      })),
    responseSchema: (fields) => {
      const results = rootField('runWebhookSandbox')(fields) as { items: JsonSchema };
      const result = results.items;
      const properties = result.properties as Record<string, JsonSchema>;
      return arrayOf({
        ...result,
        properties: { ...properties, responseData: omittingNulls(properties.responseData!, conditionalMembers(SANDBOX_RESPONSE_DATA)) },
      });
    },
    documentedResponse: listOf(SANDBOX_RESULT),
    errorCodes: [ErrorCode.FORBIDDEN, ErrorCode.NOT_FOUND, ErrorCode.CONFLICT],
    example: { body: { svcCardId: 'demo_test_card', sandBoxCases: ['t001_01', 't002_01'] } },
  },
  {
    method: 'POST',
    paths: ['/condor/card/add'],
    api: 'aggregator',
    summary: 'Add a secondary debit card and checking account (deprecated: /ibis replaces /condor)',
    designed:
      "the allowed values of cardAttributes (the spec does not show them): productID and designId up to 36 letters, digits, _ or -; nameOnCard up to 26 letters, spaces, dots, apostrophes or dashes; addressType and issueType up to 36 characters. Only a customer who already holds a card of the aggregator's program gets one.",
    credential: 'x-svc-token',
    body: 'object',
    requestSchema: object(
      {
        customerId: FIELD.id,
        cardAttributes: object(
          {
            productID: { type: 'string', maxLength: 36, pattern: '^[A-Za-z0-9_-]+$', description: 'letters, digits, _ or -' },
            nameOnCard: {
              type: 'string',
              maxLength: 26,
              pattern: "^[A-Za-z .'-]+$",
              description: 'up to 26 letters, spaces, dots, apostrophes or dashes',
            },
            designId: { type: 'string', maxLength: 36, pattern: '^[A-Za-z0-9_-]+$', description: 'letters, digits, _ or -' },
            addressType: { type: 'string', maxLength: 36 },
            issueType: { type: 'string', maxLength: 36 },
            additionalData: FIELD.object,
          },
          ['productID', 'nameOnCard', 'designId', 'addressType', 'issueType'],
        ),
      },
      ['customerId', 'cardAttributes'],
    ),
    operation: 'condor-card-add.graphql',
    variables: ({ body }) => {
      const input = pick(body, ['customerId', 'cardAttributes']);
      // Members of cardAttributes the spec does not name are ignored too.
      if (input.cardAttributes !== null && typeof input.cardAttributes === 'object')
        input.cardAttributes = pick(input.cardAttributes, [
          'productID',
          'nameOnCard',
          'designId',
          'addressType',
          'issueType',
          'additionalData',
        ]);
      return { input };
    },
    respond: (data) => data.addCondorCard,
    responseSchema: rootField('addCondorCard'),
    documentedResponse: CARD_ADD_RESULT,
    errorCodes: [ErrorCode.FORBIDDEN, ErrorCode.NOT_FOUND],
    example: {
      body: {
        customerId: 'demo_user_1',
        cardAttributes: {
          productID: 'debit_classic',
          nameOnCard: 'DANA DEMO',
          designId: 'blue',
          addressType: 'home',
          issueType: 'virtual',
        },
      },
    },
  },
];
