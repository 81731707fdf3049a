import { DEMO } from '../../../platform/domain/demo.js';
import { ErrorCode } from '../../../platform/contracts/errors.js';
import { FIELD, PAGING } from '../contract/fields.js';
import { arrayOf, nullable, object, withoutNullType, type JsonSchema } from '../contract/json-schema.js';
import { graphEnumValues } from '../contract/api-schema.js';
import { pick, rootField, RouteInputError, type Route, type RouteInput } from './route.js';
import {
  BENEFICIARY,
  fieldsOf,
  FUNDS_TRANSACTION,
  IOU_ACCOUNT,
  JWT_RESULT,
  listOf,
  listResult,
  PAYMENT_LINK,
  REFUND_TRANSACTION,
  TRANSACTION,
  UNDO,
} from './documented.js';

/** A date filter: YYYY-MM-DD, or an ISO 8601 date-time. */
const DATE_FILTER: JsonSchema = {
  type: 'string',
  pattern: '^$|^[0-9]{4}-[0-9]{2}-[0-9]{2}',
  description: 'ISO date (YYYY-MM-DD) or date-time; empty means no bound',
};

/** The beneficiary properties `POST /beneficiary/:SvcBeneficiaryId` documents; anything else is ignored. */
const BENEFICIARY_FIELDS = [
  'name',
  'defaultAmount',
  'defaultCurrency',
  'status',
  'isActive',
  'isHidden',
  'isFavourite',
  'paypalId',
  'bankName',
  'accountNumber',
  'routingNumber',
  'destinationName',
  'type',
  'destinationFirstName',
  'destinationLastName',
  'destinationPAN',
  'expiryMM',
  'expiryYY',
  'narrativeCredit',
  'narrativeDebit',
  'defaultSourceAccountId',
  'SvcPayeeId',
] as const;
const PAYMENT_LINK_FIELDS = [
  'svcMerchantRef',
  'payerName',
  'invoiceNumber',
  'amount',
  'currency',
  'dueDate',
  'description',
  'fields',
  'availablePaymentType',
] as const;
const REFUND_FILTERS = [
  'svcTransactionId',
  'svcTransactionIds',
  'status',
  'payerName',
  'dateCreateFrom',
  'dateCreateTo',
  'dueDateFrom',
  'dueDateTo',
  'invoiceNumber',
  'amountFrom',
  'amountTo',
  'paymentType',
  'numberOfRecords',
  'skipRecords',
  'svcMerchantId',
  'svcMerchantIds',
  'svcMerchantRef',
] as const;
/** The Funds-retrieve ids; the graph refuses none or more than one. */
const FUNDS_IDS = ['svcFundsId', 'reference', 'arn'] as const;

/** `changes` of a transaction modification: only comment and labels. */
function transactionChanges({ body }: RouteInput) {
  const { changes } = body as { changes?: unknown };
  if (changes === undefined || changes === null) return null;
  if (typeof changes !== 'object' || Array.isArray(changes))
    throw new RouteInputError(ErrorCode.BAD_REQUEST, 'changes must be an object with comment and/or labels.', 'changes');
  return pick(changes, ['comment', 'labels']);
}

/** Accounts, transactions, beneficiaries, IOUs, funds, payment links and refunds (payments subgraph). */
export const PAYMENT_ROUTES: Route[] = [
  {
    method: 'GET',
    paths: ['/accounts/:SvcAccountId/transactions/latest'],
    api: 'end-user',
    credential: 'token',
    body: 'none',
    summary: "The account's latest transactions: the last 30, or those of the last 12 months if fewer",
    responseSchema: rootField('latestTransactions'),
    documentedResponse: listOf(TRANSACTION),
    errorCodes: [ErrorCode.NOT_FOUND],
    example: { params: { SvcAccountId: DEMO.accountId } },
    operation: 'transactions-latest.graphql',
    variables: ({ params }) => ({ SvcAccountId: params.SvcAccountId }),
    // The spec: a bare JSON array of Transaction records.
    respond: (data) => data.latestTransactions,
  },
  {
    method: 'POST',
    paths: [
      '/account/:SvcAccountId/transaction/:transactionId',
      '/accounts/:SvcAccountId/transaction/:transactionId',
      '/account/:SvcAccountId/transactions/:transactionId',
      '/accounts/:SvcAccountId/transactions/:transactionId',
    ],
    api: 'end-user',
    credential: 'token',
    body: 'object',
    summary: "Change a transaction's comment and labels",
    designed: 'the response `{success, transaction}`, the transaction after the change; the comment is kept as a memo.',
    requestSchema: object({
      changes: nullable(
        object({
          comment: { type: 'string', minLength: 1, maxLength: 500 },
          labels: arrayOf({ type: 'string', minLength: 1, maxLength: 50 }, { maxItems: 20, description: 'at most 20 labels' }),
        }),
      ),
    }),
    responseSchema: rootField('modifyTransaction'),
    // Designed as {success, transaction}; the transaction is the spec's Transaction record.
    documentedResponse: fieldsOf(['success', 'transaction'], { nested: { transaction: TRANSACTION } }),
    errorCodes: [ErrorCode.NOT_FOUND],
    example: {
      params: { SvcAccountId: DEMO.accountId, transactionId: 'demo_txn_01' },
      body: { changes: { comment: 'Team lunch', labels: ['food', 'work'] } },
    },
    operation: 'transaction-modify.graphql',
    variables: (input) => ({
      SvcAccountId: input.params.SvcAccountId,
      transactionId: input.params.transactionId,
      changes: transactionChanges(input),
    }),
    respond: (data) => data.modifyTransaction,
  },
  {
    method: 'POST',
    paths: ['/beneficiary/:SvcBeneficiaryId'],
    api: 'end-user',
    credential: 'token',
    body: 'object',
    summary: 'Modify a beneficiary; returns an undo object for five minutes',
    requestSchema: object({
      name: nullable({ type: 'string', minLength: 1, maxLength: 200 }),
      defaultAmount: {
        type: 'number',
        minimum: 0,
        description: 'from 0, with at most the decimal places of defaultCurrency (USD while none)',
      },
      defaultCurrency: nullable(FIELD.currency),
      status: nullable({ type: 'string', maxLength: 50 }),
      isActive: nullable(FIELD.boolean),
      isHidden: nullable(FIELD.boolean),
      isFavourite: nullable(FIELD.boolean),
      paypalId: nullable({ type: 'string', maxLength: 254 }),
      bankName: nullable({ type: 'string', maxLength: 200 }),
      accountNumber: nullable({
        type: 'string',
        pattern: '^[A-Za-z0-9]{4,34}$',
        description: '4-34 letters or digits; stored and returned masked',
      }),
      routingNumber: nullable({ ...FIELD.routingNumber, minLength: 9, maxLength: 9 }),
      destinationName: nullable({ type: 'string', maxLength: 200 }),
      type: nullable({ type: 'string', maxLength: 50 }),
      destinationFirstName: nullable({ type: 'string', maxLength: 200 }),
      destinationLastName: nullable({ type: 'string', maxLength: 200 }),
      destinationPAN: nullable({ type: 'string', pattern: '^[0-9]{12,19}$', description: '12-19 digits; stored and returned masked' }),
      expiryMM: nullable({ type: 'string', pattern: '^(0[1-9]|1[0-2])$', description: 'MM' }),
      expiryYY: nullable({ type: 'string', pattern: '^[0-9]{2}$', description: 'YY' }),
      narrativeCredit: nullable({ type: 'string', maxLength: 200 }),
      narrativeDebit: nullable({ type: 'string', maxLength: 200 }),
      defaultSourceAccountId: nullable(FIELD.id),
      SvcPayeeId: nullable(FIELD.id),
    }),
    responseSchema: rootField('modifyBeneficiary'),
    documentedResponse: fieldsOf(['success', 'beneficiary', 'undo'], { nested: { beneficiary: BENEFICIARY, undo: UNDO } }),
    errorCodes: [ErrorCode.NOT_FOUND, ErrorCode.CONFLICT],
    example: { params: { SvcBeneficiaryId: 'demo_beneficiary_1' }, body: { name: 'Mom', isFavourite: true, routingNumber: '021000021' } },
    operation: 'beneficiary-modify.graphql',
    variables: ({ params, body }) => ({ SvcBeneficiaryId: params.SvcBeneficiaryId, input: pick(body, BENEFICIARY_FIELDS) }),
    respond: (data) => data.modifyBeneficiary,
  },
  {
    method: 'POST',
    // Designed: the spec returns an Undo object with the modification but names no way to use it.
    paths: ['/beneficiary/:SvcBeneficiaryId/undo/:undoId'],
    api: 'end-user',
    credential: 'token',
    body: 'none',
    summary: 'Undo a beneficiary modification with the undo object it returned',
    designed:
      'this route: the spec returns an undo object with each modification but names no way to use it. Once, before dtsExpiry, and only for the latest change (changes undo last-first); answers `{success, beneficiary}`.',
    responseSchema: rootField('undoBeneficiaryChange'),
    // Designed as {success, beneficiary}; the beneficiary is the spec's Beneficiary.
    documentedResponse: fieldsOf(['success', 'beneficiary'], { nested: { beneficiary: BENEFICIARY } }),
    errorCodes: [ErrorCode.NOT_FOUND, ErrorCode.CONFLICT],
    example: { params: { SvcBeneficiaryId: 'demo_beneficiary_1', undoId: 'undo_id_from_the_modification' } },
    operation: 'beneficiary-undo.graphql',
    variables: ({ params }) => ({ SvcBeneficiaryId: params.SvcBeneficiaryId, undoId: params.undoId }),
    respond: (data) => data.undoBeneficiaryChange,
  },
  {
    method: 'GET',
    paths: ['/ious/for/:SvcUserId'],
    api: 'end-user',
    credential: 'token',
    body: 'none',
    summary: 'The IOU between the current user (the debtor) and another user (the creditor)',
    responseSchema: (fields) =>
      object({ success: { const: true }, payload: rootField('iousFor')(fields) }, ['success', 'payload'], { additionalProperties: false }),
    documentedResponse: fieldsOf(['success', 'payload'], { nested: { payload: listOf(IOU_ACCOUNT) } }),
    example: { params: { SvcUserId: DEMO.friendUserId } },
    operation: 'ious-for.graphql',
    variables: ({ params }) => ({ SvcUserId: params.SvcUserId }),
    respond: (data) => ({ success: true, payload: data.iousFor }),
  },
  {
    method: 'POST',
    paths: ['/ibis/financial/retrieve'],
    api: 'aggregator',
    credential: 'x-svc-token',
    body: 'object',
    summary: 'Retrieve a funds transaction by exactly one of svcFundsId, reference, arn',
    designed:
      'the status of the multi-id rejection: none or more than one id is 400 (VALIDATION_FAILED) naming the ids sent; an unknown id gives an empty list.',
    requestSchema: object({ svcFundsId: FIELD.id, reference: FIELD.reference, arn: FIELD.arn }, [], {
      description: 'Exactly one of the three.',
    }),
    responseSchema: rootField('fundsTransactions'),
    documentedResponse: listOf(FUNDS_TRANSACTION),
    example: { body: { reference: 'FUNDREF1000' } },
    operation: 'funds-retrieve.graphql',
    variables: ({ body }) => ({ input: pick(body, FUNDS_IDS) }),
    respond: (data) => data.fundsTransactions,
  },
  {
    method: 'POST',
    paths: ['/payment-link/merchant/get-token'],
    api: 'aggregator',
    credential: 'x-svc-token',
    body: 'object',
    summary: "Issue a merchant JWT (1 hour) for one of the aggregator's merchants",
    requestSchema: object({ svcMerchantId: FIELD.id }, ['svcMerchantId']),
    responseSchema: rootField('merchantToken'),
    documentedResponse: JWT_RESULT,
    errorCodes: [ErrorCode.FORBIDDEN, ErrorCode.NOT_FOUND],
    example: { body: { svcMerchantId: DEMO.merchantId } },
    operation: 'merchant-token.graphql',
    variables: ({ body }) => ({ svcMerchantId: (body as { svcMerchantId?: unknown }).svcMerchantId ?? null }),
    respond: (data) => data.merchantToken,
  },
  {
    method: 'POST',
    paths: ['/public/customer/payment/link'],
    api: 'aggregator',
    credential: null,
    body: 'object',
    summary: 'Exchange a payment link for a customer JWT (1 hour)',
    requestSchema: object({ link: { type: 'string', minLength: 1, maxLength: 200 } }, ['link']),
    responseSchema: rootField('customerToken'),
    documentedResponse: JWT_RESULT,
    errorCodes: [ErrorCode.NOT_FOUND, ErrorCode.CONFLICT],
    example: { body: { link: DEMO.sentLinkCode } },
    operation: 'customer-token.graphql',
    variables: ({ body }) => ({ link: (body as { link?: unknown }).link ?? null }),
    respond: (data) => data.customerToken,
  },
  {
    method: 'GET',
    // Designed: where a sent link's `url` points (PAYMENT_PAGE_URL defaults to this adapter's /pay).
    paths: ['/pay'],
    api: 'aggregator',
    credential: null,
    body: 'none',
    responseType: 'html',
    summary: 'The payment page of a sent link (HTML)',
    designed:
      "this route: where a sent link's `url` points. An HTML page under a strict content security policy; an unknown or closed link answers 404.",
    queryParameters: { link: { schema: { type: 'string', minLength: 1, maxLength: 200 }, required: true, description: 'The link code.' } },
    responseSchema: () => ({ type: 'string' }),
    documentedResponse: null,
    errorCodes: [ErrorCode.NOT_FOUND],
    example: { query: { link: DEMO.sentLinkCode } },
    operation: 'payment-page.graphql',
    variables: ({ query }) => {
      const link = query.get('link');
      if (!link)
        throw new RouteInputError(ErrorCode.REQUIRED_ELEMENT_MISSING, 'The link query parameter is required: /pay?link=<code>.', 'link');
      return { link };
    },
    respond: (data) => data.paymentPage,
  },
  {
    method: 'GET',
    // Designed: the customer reads the link its JWT was issued for.
    paths: ['/public/customer/payment'],
    api: 'aggregator',
    credential: 'x-svc-jwtoken',
    body: 'none',
    summary: 'The payment link the customer JWT was issued for',
    designed: 'this route: the customer side of a link, read with the customer JWT.',
    // The adapter answers 404 rather than a null link.
    responseSchema: (fields) => withoutNullType(rootField('paymentLink')(fields)),
    // The customer's view of the link (with the merchant's name and logos), not the spec's Payment link.
    documentedResponse: null,
    errorCodes: [ErrorCode.NOT_FOUND],
    operation: 'customer-payment-link.graphql',
    variables: () => ({}),
    respond: (data) => {
      if (!data.paymentLink) throw new RouteInputError(ErrorCode.NOT_FOUND, 'The payment link does not exist.');
      return data.paymentLink;
    },
  },
  {
    method: 'POST',
    // Designed: the spec names no way to create a link.
    paths: ['/public/merchant/payment/create'],
    api: 'aggregator',
    credential: 'x-svc-jwtoken',
    body: 'object',
    summary: 'Create a payment link (status Initiated)',
    designed: 'this route: the spec names no way to create a link. Answers the Payment link.',
    requestSchema: object(
      {
        svcMerchantRef: nullable(FIELD.reference),
        payerName: nullable({ type: 'string', minLength: 1, maxLength: 100 }),
        invoiceNumber: nullable({ type: 'string', maxLength: 50, pattern: '^[^<>]*$' }),
        amount: {
          type: 'number',
          exclusiveMinimum: 0,
          maximum: 1000000,
          description: 'positive, with at most the decimal places of the currency',
        },
        currency: FIELD.currency,
        dueDate: nullable({ ...FIELD.date, description: 'YYYY-MM-DD, not in the past' }),
        description: nullable({ type: 'string', maxLength: 500 }),
        fields: arrayOf(
          object(
            {
              index: { type: 'integer' },
              code: { type: 'string', enum: graphEnumValues('PaymentLinkFieldCode') },
              label: { type: 'string', maxLength: 100 },
              value: FIELD.string,
            },
            ['code', 'value'],
          ),
          { maxItems: 10 },
        ),
        availablePaymentType: nullable(arrayOf({ type: 'string', enum: graphEnumValues('PaymentType') }, { minItems: 1, maxItems: 2 })),
      },
      ['amount', 'currency'],
    ),
    responseSchema: rootField('createPaymentLink'),
    documentedResponse: PAYMENT_LINK,
    example: {
      body: {
        svcMerchantRef: 'INV2026001',
        payerName: 'Pat Payer',
        invoiceNumber: 'INV-2026-001',
        amount: 125.5,
        currency: 'USD',
        fields: [{ index: 0, code: 'email', label: 'Email', value: 'pat@example.com' }],
      },
    },
    operation: 'payment-link-create.graphql',
    variables: ({ body }) => {
      const input = pick(body, PAYMENT_LINK_FIELDS);
      if (Array.isArray(input.fields))
        input.fields = (input.fields as unknown[]).map((field) =>
          field !== null && typeof field === 'object' ? pick(field, ['index', 'code', 'label', 'value']) : field,
        );
      return { input };
    },
    respond: (data) => data.createPaymentLink,
  },
  {
    method: 'POST',
    paths: ['/public/merchant/payment/cancel'],
    api: 'aggregator',
    credential: 'x-svc-jwtoken',
    body: 'object',
    summary: 'Cancel a payment link (allowed when Initiated, Sent or Processing)',
    requestSchema: object({ svcTransactionId: FIELD.id }, ['svcTransactionId']),
    responseSchema: rootField('cancelPaymentLink'),
    documentedResponse: PAYMENT_LINK,
    errorCodes: [ErrorCode.NOT_FOUND, ErrorCode.CONFLICT],
    example: { body: { svcTransactionId: 'demo_link_1' } },
    operation: 'payment-link-cancel.graphql',
    variables: ({ body }) => ({ svcTransactionId: (body as { svcTransactionId?: unknown }).svcTransactionId ?? null }),
    respond: (data) => data.cancelPaymentLink,
  },
  {
    method: 'POST',
    paths: ['/public/merchant/payment/send'],
    api: 'aggregator',
    credential: 'x-svc-jwtoken',
    body: 'object',
    summary: "Send a payment link (Initiated → Sent): by email, or to the merchant's webhook",
    requestSchema: object({ svcTransactionId: FIELD.id }, ['svcTransactionId']),
    responseSchema: rootField('sendPaymentLink'),
    documentedResponse: PAYMENT_LINK,
    errorCodes: [ErrorCode.NOT_FOUND, ErrorCode.CONFLICT],
    example: { body: { svcTransactionId: 'demo_link_1' } },
    operation: 'payment-link-send.graphql',
    variables: ({ body }) => ({ svcTransactionId: (body as { svcTransactionId?: unknown }).svcTransactionId ?? null }),
    respond: (data) => data.sendPaymentLink,
  },
  {
    method: 'POST',
    // Designed: refunds are listed by the spec, but it names no way to issue one.
    paths: ['/public/merchant/payment/refund'],
    api: 'aggregator',
    credential: 'x-svc-jwtoken',
    body: 'object',
    summary: 'Refund a paid payment link, by card or ACH',
    designed:
      "this route: refunds are listed by the spec, but it names no way to issue one. Never more than the link's amount in all; answers the Refund transaction.",
    requestSchema: object(
      {
        svcTransactionId: FIELD.id,
        amount: nullable({
          type: 'number',
          exclusiveMinimum: 0,
          description: "with at most the decimal places of the link's currency; the rest of the amount when absent",
        }),
        paymentType: { type: 'string', enum: graphEnumValues('PaymentType') },
        ach: nullable(
          object(
            {
              individualName: { type: 'string', minLength: 1, maxLength: 22 },
              routingNumber: FIELD.routingNumber,
              DFIAccountNumber: { type: 'string', pattern: '^[0-9]{4,17}$', description: '4-17 digits' },
              accountType: { type: 'string', enum: graphEnumValues('AccountType'), description: 'checking when absent' },
              companyEntryDescription: nullable({ type: 'string', minLength: 1, maxLength: 10, pattern: '^[A-Za-z0-9 ]+$' }),
              webhookUrl: nullable(FIELD.string),
            },
            ['individualName', 'routingNumber', 'DFIAccountNumber'],
          ),
        ),
      },
      ['svcTransactionId', 'paymentType'],
    ),
    responseSchema: rootField('refundPaymentLink'),
    documentedResponse: REFUND_TRANSACTION,
    errorCodes: [ErrorCode.NOT_FOUND, ErrorCode.CONFLICT],
    example: { body: { svcTransactionId: 'demo_link_6', amount: 10, paymentType: 'card' } },
    operation: 'payment-link-refund.graphql',
    variables: ({ body }) => {
      const input = pick(body, ['svcTransactionId', 'amount', 'paymentType', 'ach']);
      if (input.ach !== null && typeof input.ach === 'object')
        input.ach = pick(input.ach, [
          'individualName',
          'routingNumber',
          'DFIAccountNumber',
          'accountType',
          'companyEntryDescription',
          'webhookUrl',
        ]);
      return { input };
    },
    respond: (data) => data.refundPaymentLink,
  },
  {
    method: 'POST',
    paths: ['/public/merchant/logo/upload/:type'],
    api: 'aggregator',
    credential: 'x-svc-jwtoken',
    body: 'multipart',
    maxFileBytes: 1024 * 1024,
    summary: 'Upload a merchant logo (PNG, JPEG or GIF, at most 1 MiB) in form field file',
    designed: 'logo file types and size: PNG, JPEG or GIF by content, at most 1 MiB; a new logo of a type replaces the old one.',
    paramSchemas: { type: { type: 'string', enum: graphEnumValues('LogoType') } },
    responseSchema: rootField('uploadMerchantLogo'),
    documentedResponse: fieldsOf(['logoId']),
    example: { params: { type: 'light' } },
    operation: 'merchant-logo-upload.graphql',
    variables: ({ params, files }) => {
      const file = files.find((f) => f.fieldName === 'file');
      if (!file) throw new RouteInputError(ErrorCode.REQUIRED_ELEMENT_MISSING, 'The logo is required, in form field `file`.', 'file');
      return {
        input: { type: params.type, contentType: file.contentType, contentBase64: file.data.toString('base64'), fileName: file.fileName },
      };
    },
    respond: (data) => data.uploadMerchantLogo,
  },
  {
    method: 'POST',
    paths: ['/payment-link/payment/refund-list'],
    api: 'aggregator',
    credential: 'x-svc-token',
    body: 'object',
    summary: 'List payment-link refund transactions, filtered and paged',
    requestSchema: object({
      svcTransactionId: FIELD.id,
      svcTransactionIds: arrayOf(FIELD.id, { maxItems: 1000 }),
      status: nullable({ type: 'string', enum: graphEnumValues('PaymentLinkStatus') }),
      payerName: nullable({ type: 'string', maxLength: 100 }),
      dateCreateFrom: nullable(DATE_FILTER),
      dateCreateTo: nullable(DATE_FILTER),
      dueDateFrom: nullable(DATE_FILTER),
      dueDateTo: nullable(DATE_FILTER),
      invoiceNumber: { type: 'string', maxLength: 50, pattern: '^[^<>]*$' },
      amountFrom: { type: 'number', minimum: 0 },
      amountTo: { type: 'number', minimum: 0 },
      paymentType: nullable({ type: 'string', enum: graphEnumValues('PaymentType') }),
      ...PAGING,
      svcMerchantId: FIELD.id,
      svcMerchantIds: arrayOf(FIELD.id, { maxItems: 1000 }),
      svcMerchantRef: FIELD.reference,
    }),
    responseSchema: rootField('refundList'),
    documentedResponse: listResult(REFUND_TRANSACTION),
    example: { body: { svcMerchantId: DEMO.merchantId, paymentType: 'card', numberOfRecords: 10, skipRecords: 0 } },
    operation: 'refund-list.graphql',
    variables: ({ body }) => ({ filter: pick(body, REFUND_FILTERS) }),
    respond: (data) => data.refundList,
  },
];
