import { ErrorCode } from '../../../platform/errors.js';
import { pick, RouteInputError, withoutNulls, type Route } from './route.js';

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

/** Restrictions, KYC applications and ACH return rates (compliance subgraph). */
export const COMPLIANCE_ROUTES: Route[] = [
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
];
