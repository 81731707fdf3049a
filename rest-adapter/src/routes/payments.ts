import { ErrorCode } from '../../../platform/errors.js';
import { pick, RouteInputError, type Route, type RouteInput } from './route.js';

/** The beneficiary properties `POST /beneficiary/:SvcBeneficiaryId` documents; anything else is ignored. */
const BENEFICIARY_FIELDS = [
  'name', 'defaultAmount', 'defaultCurrency', 'status', 'isActive', 'isHidden', 'isFavourite', 'paypalId', 'bankName', 'accountNumber',
  'routingNumber', 'destinationName', 'type', 'destinationFirstName', 'destinationLastName', 'destinationPAN', 'expiryMM', 'expiryYY',
  'narrativeCredit', 'narrativeDebit', 'defaultSourceAccountId', 'SvcPayeeId',
] as const;
const PAYMENT_LINK_FIELDS = ['svcMerchantRef', 'payerName', 'invoiceNumber', 'amount', 'currency', 'dueDate', 'description', 'fields', 'availablePaymentType'] as const;
const REFUND_FILTERS = [
  'svcTransactionId', 'svcTransactionIds', 'status', 'payerName', 'dateCreateFrom', 'dateCreateTo', 'dueDateFrom', 'dueDateTo', 'invoiceNumber',
  'amountFrom', 'amountTo', 'paymentType', 'numberOfRecords', 'skipRecords', 'svcMerchantId', 'svcMerchantIds', 'svcMerchantRef',
] as const;
/** The Funds-retrieve ids; the graph refuses none or more than one. */
const FUNDS_IDS = ['svcFundsId', 'reference', 'arn'] as const;

/** `changes` of a transaction modification: only comment and labels. */
function transactionChanges({ body }: RouteInput) {
  const { changes } = body as { changes?: unknown };
  if (changes === undefined || changes === null) return null;
  if (typeof changes !== 'object' || Array.isArray(changes)) throw new RouteInputError(ErrorCode.BAD_REQUEST, 'changes must be an object with comment and/or labels.', 'changes');
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
    operation: 'transaction-modify.graphql',
    variables: (input) => ({ SvcAccountId: input.params.SvcAccountId, transactionId: input.params.transactionId, changes: transactionChanges(input) }),
    respond: (data) => data.modifyTransaction,
  },
  {
    method: 'POST',
    paths: ['/beneficiary/:SvcBeneficiaryId'],
    api: 'end-user',
    credential: 'token',
    body: 'object',
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
    operation: 'payment-page.graphql',
    variables: ({ query }) => {
      const link = query.get('link');
      if (!link) throw new RouteInputError(ErrorCode.REQUIRED_ELEMENT_MISSING, 'The link query parameter is required: /pay?link=<code>.', 'link');
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
    operation: 'payment-link-create.graphql',
    variables: ({ body }) => {
      const input = pick(body, PAYMENT_LINK_FIELDS);
      if (Array.isArray(input.fields)) input.fields = input.fields.map((field) => (field !== null && typeof field === 'object' ? pick(field, ['index', 'code', 'label', 'value']) : field));
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
    operation: 'payment-link-refund.graphql',
    variables: ({ body }) => {
      const input = pick(body, ['svcTransactionId', 'amount', 'paymentType', 'ach']);
      if (input.ach !== null && typeof input.ach === 'object') input.ach = pick(input.ach, ['individualName', 'routingNumber', 'DFIAccountNumber', 'accountType', 'companyEntryDescription', 'webhookUrl']);
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
    operation: 'merchant-logo-upload.graphql',
    variables: ({ params, files }) => {
      const file = files.find((f) => f.fieldName === 'file');
      if (!file) throw new RouteInputError(ErrorCode.REQUIRED_ELEMENT_MISSING, 'The logo is required, in form field `file`.', 'file');
      return { input: { type: params.type, contentType: file.contentType, contentBase64: file.data.toString('base64'), fileName: file.fileName } };
    },
    respond: (data) => data.uploadMerchantLogo,
  },
  {
    method: 'POST',
    paths: ['/payment-link/payment/refund-list'],
    api: 'aggregator',
    credential: 'x-svc-token',
    body: 'object',
    operation: 'refund-list.graphql',
    variables: ({ body }) => ({ filter: pick(body, REFUND_FILTERS) }),
    respond: (data) => data.refundList,
  },
];
