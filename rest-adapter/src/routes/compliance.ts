import { ErrorCode } from '../../../platform/contracts/errors.js';
import { FIELD, PAGING } from '../contract/fields.js';
import { arrayOf, nullable, object, omittingNulls, withoutNullType, type JsonSchema } from '../contract/json-schema.js';
import { graphEnumValues } from '../contract/api-schema.js';
import { pick, rootField, RouteInputError, withoutNulls, type Route } from './route.js';
import {
  APPLICATION,
  ACH_RETURN_RATES_ITEM,
  conditionalMembers,
  fieldsOf,
  keyedBy,
  listOf,
  listResult,
  RESTRICTION,
  TRANSACTION_TYPE_RULE,
} from './documented.js';

/** A person of a KYC customer: an individual, or a business's representative. */
const PERSON = object(
  {
    firstName: { type: 'string', minLength: 1, maxLength: 100 },
    lastName: { type: 'string', minLength: 1, maxLength: 100 },
    dateOfBirth: nullable(FIELD.date),
  },
  ['firstName', 'lastName'],
);

/** `GET /restrictions`: the spec's three members; allowedTransactionTypeNames keyed by type name. */
function restrictionsBody(data: Record<string, unknown>) {
  const me = data.me as { restrictions: Array<Record<string, unknown>>; proceduralRestrictionNames: string[] };
  const types = data.transactionTypes as Array<{ name: string } & Record<string, unknown>>;
  return {
    success: true,
    restrictions: me.restrictions.map((restriction) => withoutNulls(restriction, conditionalMembers(RESTRICTION))),
    proceduralRestrictionNames: me.proceduralRestrictionNames,
    allowedTransactionTypeNames: Object.fromEntries(
      types.map(({ name, ...rule }) => [name, withoutNulls(rule, conditionalMembers(TRANSACTION_TYPE_RULE))]),
    ),
  };
}

/** `GET /restrictions`: "restrictions, proceduralRestrictionNames, allowedTransactionTypeNames". */
const RESTRICTIONS_ANSWER = fieldsOf(['restrictions', 'proceduralRestrictionNames', 'allowedTransactionTypeNames'], {
  nested: { restrictions: listOf(RESTRICTION), allowedTransactionTypeNames: keyedBy(TRANSACTION_TYPE_RULE) },
});

const AGGREGATOR_LIST_FIELDS = ['customerId', 'dateCreateFrom', 'dateCreateTo', 'numberOfRecords', 'skipRecords'] as const;

/** Restrictions, KYC applications and ACH return rates (compliance subgraph). */
export const COMPLIANCE_ROUTES: Route[] = [
  {
    method: 'GET',
    paths: ['/restrictions'],
    api: 'end-user',
    credential: 'token',
    body: 'none',
    summary: "The restrictions on the current user's transactions, with procedural restrictions and allowed transaction types",
    responseSchema: (fields) => {
      const me = rootField('me')(fields) as { properties: { restrictions: { items: JsonSchema }; proceduralRestrictionNames: JsonSchema } };
      const types = rootField('transactionTypes')(fields) as { items: { properties: Record<string, JsonSchema>; required: string[] } };
      const { name: _name, ...rule } = types.items.properties;
      return object(
        {
          success: { const: true },
          restrictions: arrayOf(omittingNulls(me.properties.restrictions.items, conditionalMembers(RESTRICTION))),
          // Nullable in the graph (compliance down: an error), never null in this answer (an error is an error answer).
          proceduralRestrictionNames: withoutNullType(me.properties.proceduralRestrictionNames),
          allowedTransactionTypeNames: {
            type: 'object',
            description: 'Keyed by transaction type name.',
            additionalProperties: omittingNulls(
              { ...types.items, properties: rule, required: types.items.required.filter((key) => key !== 'name') },
              conditionalMembers(TRANSACTION_TYPE_RULE),
            ),
          },
        },
        ['success', 'restrictions', 'proceduralRestrictionNames', 'allowedTransactionTypeNames'],
        { additionalProperties: false },
      );
    },
    documentedResponse: RESTRICTIONS_ANSWER,
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
    summary: 'Open a KYC (individual) or KYB (business) customer and its application',
    designed:
      'this route, named by the spec without a path or shape. A business customer gets a representative entity whose id the response gives (`businessRepresentativeId`).',
    requestSchema: object(
      {
        customerId: FIELD.id,
        type: { type: 'string', enum: graphEnumValues('CustomerType') },
        reference: nullable(FIELD.reference),
        individual: nullable(PERSON),
        business: nullable(
          object(
            {
              legalName: { type: 'string', minLength: 1, maxLength: 200 },
              registrationNumber: { type: 'string', minLength: 1, maxLength: 50, pattern: '^[A-Za-z0-9-]+$' },
              representative: PERSON,
            },
            ['legalName', 'registrationNumber', 'representative'],
          ),
        ),
      },
      ['customerId', 'type'],
      { description: 'An individual needs `individual`; a business needs `business`.' },
    ),
    responseSchema: rootField('initializeCustomer'),
    // Designed; the application in it is the spec's Application.
    documentedResponse: fieldsOf(['application'], { nested: { application: APPLICATION } }),
    errorCodes: [ErrorCode.FORBIDDEN, ErrorCode.CONFLICT],
    example: {
      body: {
        customerId: 'new_customer_1',
        type: 'individual',
        reference: 'CUST0003',
        individual: { firstName: 'Ivy', lastName: 'Applicant', dateOfBirth: '1990-05-17' },
      },
    },
    operation: 'customer-init.graphql',
    variables: ({ body }) => {
      const input = pick(body, ['customerId', 'type', 'reference', 'individual', 'business']);
      // Members of the person and business objects the route does not name are ignored too.
      const person = (value: unknown) =>
        value !== null && typeof value === 'object' ? pick(value, ['firstName', 'lastName', 'dateOfBirth']) : value;
      input.individual = person(input.individual);
      if (input.business !== null && typeof input.business === 'object') {
        const business = pick(input.business, ['legalName', 'registrationNumber', 'representative']);
        input.business = { ...business, representative: person(business.representative) };
      }
      return { input };
    },
    respond: (data) => data.initializeCustomer,
  },
  {
    method: 'POST',
    paths: ['/akepa/document/generate'],
    api: 'aggregator',
    credential: 'x-svc-token',
    body: 'object',
    summary: 'Generate a document id to upload a file for an entity',
    designed:
      'request `{customerId, entityId, documentType}` (idCard, driverLicense, passport, selfie, businessRegistration) and response `{documentId, customerId, entityId, documentType, uploadPath}`.',
    requestSchema: object(
      { customerId: FIELD.id, entityId: FIELD.id, documentType: { type: 'string', enum: graphEnumValues('KycDocumentType') } },
      ['customerId', 'entityId', 'documentType'],
    ),
    responseSchema: rootField('generateDocument'),
    documentedResponse: null,
    errorCodes: [ErrorCode.FORBIDDEN, ErrorCode.NOT_FOUND, ErrorCode.CONFLICT],
    example: { body: { customerId: 'demo_customer_2', entityId: 'demo_customer_2', documentType: 'driverLicense' } },
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
    summary: 'Upload the file of a generated document (PNG, JPEG or PDF, at most 5 MiB) in form field file',
    designed:
      'request (multipart, form field `file`; the type is read from the content) and response `{documentId, uploaded: true}`; a document takes one file.',
    paramSchemas: { documentId: FIELD.id },
    responseSchema: rootField('uploadDocument'),
    documentedResponse: null,
    errorCodes: [ErrorCode.FORBIDDEN, ErrorCode.NOT_FOUND, ErrorCode.CONFLICT],
    example: { params: { documentId: 'document_id_from_generate' } },
    operation: 'document-upload.graphql',
    variables: ({ params, files }) => {
      const file = files.find((f) => f.fieldName === 'file');
      if (!file) throw new RouteInputError(ErrorCode.REQUIRED_ELEMENT_MISSING, 'The file is required, in form field `file`.', 'file');
      return {
        input: {
          documentId: params.documentId,
          contentType: file.contentType,
          contentBase64: file.data.toString('base64'),
          fileName: file.fileName,
        },
      };
    },
    respond: (data) => data.uploadDocument,
  },
  {
    method: 'POST',
    paths: ['/akepa/list'],
    api: 'aggregator',
    credential: 'x-svc-token',
    body: 'object',
    summary: "List a customer's KYC/KYB applications, filtered and paged",
    requestSchema: object({ customerId: FIELD.id, dateCreateFrom: nullable(FIELD.date), dateCreateTo: nullable(FIELD.date), ...PAGING }, [
      'customerId',
    ]),
    responseSchema: rootField('applications'),
    documentedResponse: listResult(APPLICATION),
    example: { body: { customerId: 'demo_customer_1', numberOfRecords: 10, skipRecords: 0 } },
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
    summary: "Link uploaded documents to an application's entities",
    requestSchema: object(
      {
        customerId: FIELD.id,
        applicationId: FIELD.id,
        documents: arrayOf(
          object({ entityId: FIELD.id, documentId: FIELD.id, view: { type: 'string', enum: graphEnumValues('DocumentView') } }, [
            'entityId',
            'documentId',
            'view',
          ]),
          { maxItems: 10 },
        ),
      },
      ['customerId', 'applicationId'],
    ),
    responseSchema: rootField('updateApplication'),
    documentedResponse: APPLICATION,
    errorCodes: [ErrorCode.FORBIDDEN, ErrorCode.NOT_FOUND, ErrorCode.CONFLICT],
    example: {
      body: {
        customerId: 'demo_customer_2',
        applicationId: 'demo_application_2',
        documents: [
          { entityId: 'demo_customer_2', documentId: 'front_document_id', view: 'front' },
          { entityId: 'demo_customer_2', documentId: 'back_document_id', view: 'back' },
        ],
      },
    },
    operation: 'application-update.graphql',
    variables: ({ body }) => {
      const input = pick(body, ['customerId', 'applicationId', 'documents']);
      if (Array.isArray(input.documents))
        input.documents = (input.documents as unknown[]).map((doc) =>
          doc !== null && typeof doc === 'object' ? pick(doc, ['entityId', 'documentId', 'view']) : doc,
        );
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
    summary: 'ACH return-rate reports: one reporting date, or the latest up to 1000',
    requestSchema: object({ date: FIELD.date, numberOfRecords: PAGING.numberOfRecords!, skipRecords: PAGING.skipRecords! }),
    responseSchema: rootField('achReturnRates'),
    documentedResponse: listResult(ACH_RETURN_RATES_ITEM),
    example: { body: { numberOfRecords: 5 } },
    operation: 'ach-return-rates.graphql',
    variables: ({ body }) => ({ input: pick(body, ['date', 'numberOfRecords', 'skipRecords']) }),
    respond: (data) => data.achReturnRates,
  },
];
