/**
 * What the two specs list of the answers: each response resource's fields, once, in the words of
 * the spec's tables. A field listed without being marked optional or conditional is always in the
 * answer, null when it has no value (strict decoders fail on a missing key); a field the spec
 * marks optional or conditional ("present on an alert that was changed") may be left out. The
 * routes name the shape of their success payload with these, and the contract tests hold the
 * OpenAPI document and the answers to it.
 */

/** What a spec lists of one response value: an object's fields, an array's items, or the values of an object keyed by names. */
export type DocumentedShape = DocumentedObject | DocumentedArray | DocumentedMap;

/** An object the spec lists the fields of. */
export interface DocumentedObject {
  readonly kind: 'object';
  /** Every listed field, with the shape of its value where the spec lists that too (null: a value or an object the spec does not detail). */
  readonly members: ReadonlyMap<string, { readonly shape: DocumentedShape | null; readonly conditional: boolean }>;
}

/** An array whose items the spec lists. */
export interface DocumentedArray {
  readonly kind: 'array';
  readonly items: DocumentedShape;
}

/** An object keyed by names (`allowedTransactionTypeNames`), each value of one shape. */
export interface DocumentedMap {
  readonly kind: 'map';
  readonly values: DocumentedShape;
}

/**
 * An object of the spec: `always` are the fields it lists without marking them, `conditional` the
 * ones it marks optional or conditional; `nested` gives the shape of members (of either list)
 * whose own fields it lists.
 */
export function fieldsOf(
  always: readonly string[],
  options: { conditional?: readonly string[]; nested?: Readonly<Record<string, DocumentedShape>> } = {},
): DocumentedObject {
  const nested = new Map(Object.entries(options.nested ?? {}));
  const members = new Map<string, { shape: DocumentedShape | null; conditional: boolean }>();
  for (const name of always) members.set(name, { shape: nested.get(name) ?? null, conditional: false });
  for (const name of options.conditional ?? []) members.set(name, { shape: nested.get(name) ?? null, conditional: true });
  for (const name of nested.keys()) if (!members.has(name)) throw new Error(`fieldsOf: nested ${name} is in neither list`);
  if (members.size !== always.length + (options.conditional?.length ?? 0)) throw new Error('fieldsOf: a field is listed twice');
  return { kind: 'object', members };
}

/** An array of `items`. */
export function listOf(items: DocumentedShape): DocumentedArray {
  return { kind: 'array', items };
}

/** An object keyed by names, each value a `values`. */
export function keyedBy(values: DocumentedShape): DocumentedMap {
  return { kind: 'map', values };
}

/** The fields the spec marks optional or conditional: the ones an answer may leave out when they have no value. */
export function conditionalMembers(shape: DocumentedObject): string[] {
  return [...shape.members].filter(([, member]) => member.conditional).map(([name]) => name);
}

/**
 * Where `value` lacks a field the shape lists without marking it optional or conditional, one
 * path each (`alerts[2].parameters`). A null object or array is not walked: null is its value.
 */
export function missingDocumentedFields(shape: DocumentedShape, value: unknown, at = ''): string[] {
  if (value === null || typeof value !== 'object') return [];
  if (shape.kind === 'array')
    return Array.isArray(value) ? value.flatMap((item, index) => missingDocumentedFields(shape.items, item, `${at}[${index}]`)) : [];
  if (Array.isArray(value)) return [];
  const record = value as Record<string, unknown>;
  if (shape.kind === 'map') return Object.keys(record).flatMap((key) => missingDocumentedFields(shape.values, record[key], `${at}.${key}`));
  const missing: string[] = [];
  for (const [name, member] of shape.members) {
    const where = at ? `${at}.${name}` : name;
    if (!Object.hasOwn(record, name)) {
      if (!member.conditional) missing.push(where);
      continue;
    }
    if (member.shape) missing.push(...missingDocumentedFields(member.shape, record[name], where));
  }
  return missing;
}

// The end-user spec's Resources.

/** Login response (PUT /token). */
export const LOGIN = fieldsOf([
  'success',
  'userId',
  'SvcUserId',
  'token',
  'segment',
  'postOnboardingStepsRequired',
  'dtsExpiry',
  'isLocalSavingAllowed',
]);

/** Beneficiary. */
export const BENEFICIARY = fieldsOf([
  'SvcBeneficiaryId',
  'name',
  'defaultAmount',
  'defaultCurrency',
  'status',
  'isActive',
  'isHidden',
  'isFavourite',
  'isDeleted',
  'paypalId',
  'bankName',
  'accountNumber',
  'routingNumber',
  'bic',
  'iban',
  'destinationName',
  'destinationFirstName',
  'destinationLastName',
  'destinationPAN',
  'expiryMM',
  'expiryYY',
  'type',
  'typeName',
  'txnType',
  'narrativeCredit',
  'narrativeDebit',
  'defaultSourceAccountId',
  'SvcPayeeId',
  'userId',
  'SvcUserId',
  'dtsCreated',
  'dtsModified',
]);

/** Undo object (returned with a beneficiary modification). */
export const UNDO = fieldsOf(['id', 'isActionable', 'dtsQueued', 'dtsExpiry']);

/** Alert: the descriptions are "in responses for general alerts", dtsModified "present on an alert that was changed". */
export const ALERT = fieldsOf(['alertTypeId', 'category', 'name', 'isEnabled', 'parameters'], {
  conditional: ['descriptionOn', 'descriptionOff', 'dtsModified'],
});

/** Restriction: description is "optional". */
export const RESTRICTION = fieldsOf(
  [
    'restrictionName',
    'txnTypes',
    'transactionCurrencies',
    'fromAmount',
    'toAmount',
    'fromAmountCurrency',
    'toAmountCurrency',
    'isAllowed',
    'isIgnoreRest',
    'priority',
  ],
  { conditional: ['description'] },
);

/** A value of `allowedTransactionTypeNames`: destinationAccountTypes is "(optional)". */
export const TRANSACTION_TYPE_RULE = fieldsOf(['isAllowed', 'sourceAccountTypes', 'allowedTransactionCurrencies'], {
  conditional: ['destinationAccountTypes'],
});

/** Card. */
export const CARD = fieldsOf([
  '_id',
  'SvcCardId',
  'SvcAccountId',
  'SvcUserId',
  'typeId',
  'cardIdBO',
  'accountIdBO',
  'backOfficeId',
  'backOfficeName',
  'status',
  'isActive',
  'isActivated',
  'isClosed',
  'num',
  'dtsOpened',
  'dtsExpiry',
  'dtsUpdated',
  'dtsActivated',
  'currency',
  'name_on_card',
  'image',
  'primaryUserSvcUserId',
  'name',
  'isMain',
]);

/** IOU transaction. */
const IOU_TRANSACTION = fieldsOf([
  'IOUAccountId',
  'IOUTransactionId',
  'borrowerSvcUserId',
  'lenderSvcUserId',
  'amount',
  'currency',
  'narrativeDebit',
  'narrativeCredit',
  'narrative',
  'dts',
  'isPending',
  'isActive',
  'attachments',
  'images',
]);

/** IOU account. */
export const IOU_ACCOUNT = fieldsOf(['IOUAccountId', 'dtsModified', 'transactions', 'SvcUserId', 'otherSvcUserId'], {
  nested: { transactions: listOf(IOU_TRANSACTION) },
});

/** Transaction record. */
export const TRANSACTION = fieldsOf(
  [
    'SvcAccountId',
    'SvcUserId',
    'SvcCardId',
    'transactionId',
    'transactionIdBO',
    'debitTransactionId',
    'creditTransactionId',
    'sourceSvcAccountId',
    'destinationSvcAccountId',
    'amount',
    'debit',
    'credit',
    'currency',
    'transactionState',
    'isPending',
    'isComplete',
    'isDeclined',
    'txnType',
    'typeName',
    'narrative',
    'narrativeSource',
    'narrativeDestination',
    'reference',
    'attachments',
    'labels',
    'details',
    'internal',
    'dtsRecorded',
    'dtsValue',
    'dtsBooked',
    'dtsCompleted',
  ],
  {
    nested: {
      details: fieldsOf(['memos']),
      internal: fieldsOf(['fromSvcUserId', 'txnType', 'sourceSvcAccountId', 'sourceAccountSvcUserId']),
    },
  },
);

/** Address. */
const ADDRESS = fieldsOf([
  'addressLine1',
  'addressLine2',
  'city',
  'state',
  'postalCode',
  'countryCode',
  'isMain',
  'SvcUserId',
  'SvcUserAddressId',
  '_id',
  'dtsRecorded',
  'dtsModified',
]);

/** User record. */
export const USER = fieldsOf(
  [
    'SvcUserId',
    '_id',
    'names',
    'name',
    'firstName',
    'middleName',
    'lastName',
    'sortId',
    'languageCode',
    'segment',
    'referralCode',
    'extras',
    'private',
    'isFullyRegistered',
    'isIdleUser',
    'isActive',
    'isMetric',
    'isEmailConfirmed',
    'isMobilePhoneConfirmed',
    'uiStage',
    'dosDob',
    'dobDay',
    'dobMonth',
    'dobYear',
    'addresses',
    'mobile',
    'phoneNumber',
    'email',
    'homecurrency',
    'postOnboardingStepsRequired',
    'faceImage',
    'mainSvcAccountId',
    'dtsCreated',
    'dtsCreatedAtUsers',
    'dtsModified',
    'dtsRegistered',
  ],
  {
    nested: {
      name: fieldsOf(['firstName', 'middleName', 'lastName']),
      extras: fieldsOf(['sex', 'eyeColor', 'hairColor', 'heightMetric', 'weightMetric']),
      addresses: listOf(ADDRESS),
    },
  },
);

// The aggregator spec's Resources (the `data` of the envelope).

/** `total` of the common list result. */
const TOTAL = fieldsOf(['skipRecords', 'numberOfRecords', 'more']);

/** The common list result: `items` of the given shape, and `total`. */
export function listResult(items: DocumentedShape): DocumentedObject {
  return fieldsOf(['items', 'total'], { nested: { items: listOf(items), total: TOTAL } });
}

/** Token result. */
export const TOKEN_RESULT = fieldsOf(['dtsExpireAt', 'token', 'type', 'tokens'], {
  nested: { tokens: listOf(fieldsOf(['token', 'type'])) },
});

/** Merchant and customer JWT results. */
export const JWT_RESULT = fieldsOf(['expiresIn', 'token']);

/** Application. */
export const APPLICATION = fieldsOf(
  ['applicationId', 'aggregatorId', 'customerId', 'reference', 'status', 'outcome', 'entityApplications'],
  { nested: { entityApplications: listOf(fieldsOf(['entityId', 'isCustomer', 'status', 'outcome'])) } },
);

/** Funds transaction. */
export const FUNDS_TRANSACTION = fieldsOf([
  'reference',
  'svcFundsId',
  'svcAggregatorId',
  'type',
  'svcCardId',
  'svcStatus',
  'boTransId',
  'arn',
  'fee',
  'balance',
  'lastDepositAmount',
  'ledgerBalance',
  'dtsCreatedAt',
]);

/** An item of a payment link's statusChangeHistory. */
const STATUS_CHANGE = fieldsOf(['initiatorId', 'initiatorType', 'status', 'dtsCreatedAt', 'dtsUpdatedAt']);
/** An item of a refund's statusChangeHistory: "as above, items may also carry _id". */
const REFUND_STATUS_CHANGE = fieldsOf(['initiatorId', 'initiatorType', 'status', 'dtsCreatedAt', 'dtsUpdatedAt'], { conditional: ['_id'] });

/** Payment link: dtsExpiredAt, link and url are "present after sending". */
export const PAYMENT_LINK = fieldsOf(
  [
    'svcTransactionId',
    'svcAggregatorId',
    'svcMerchantId',
    'svcMerchantRef',
    'payerName',
    'invoiceNumber',
    'amount',
    'currency',
    'dueDate',
    'description',
    'status',
    'fields',
    'availablePaymentType',
    'statusChangeHistory',
    'dtsCreatedAt',
  ],
  {
    conditional: ['dtsExpiredAt', 'link', 'url'],
    nested: { fields: listOf(fieldsOf(['index', 'code', 'label', 'value'])), statusChangeHistory: listOf(STATUS_CHANGE) },
  },
);

/** Refund transaction. */
export const REFUND_TRANSACTION = fieldsOf(
  [
    'svcTransactionId',
    'svcAggregatorId',
    'svcMerchantId',
    'svcParentId',
    'status',
    'statusChangeHistory',
    'paymentType',
    'ach',
    'dtsCreatedAt',
    'dtsUpdatedAt',
    'svcMerchantRef',
  ],
  {
    nested: {
      statusChangeHistory: listOf(REFUND_STATUS_CHANGE),
      ach: fieldsOf(['payment', 'result'], {
        nested: {
          payment: fieldsOf([
            'reference',
            'effectiveEntryDate',
            'companyEntryDescription',
            'standardEntryClassCode',
            'individualName',
            'routingNumber',
            'DFIAccountNumber',
            'accountType',
            'transactionType',
            'amount',
            'currency',
            'webhookUrl',
          ]),
          result: fieldsOf([
            'svcTransactionId',
            'reference',
            'svcAggregatorId',
            'status',
            'dtsCreatedAt',
            'effectiveEntryDate',
            'individualName',
            'routingNumber',
            'amount',
            'currency',
            'DFIAccountNumber',
          ]),
        },
      }),
    },
  },
);

/** ACH return rates item. */
export const ACH_RETURN_RATES_ITEM = fieldsOf(['notes', 'returnRates'], {
  nested: {
    returnRates: fieldsOf([
      'svcAggregatorId',
      'minDate',
      'maxDate',
      'adminRate',
      'adminAmountRate',
      'adminDaysOver',
      'adminReturns',
      'adminReturnsAmount',
      'unAuthorizedRate',
      'unAuthorizedAmountRate',
      'unAuthorizedDaysOver',
      'unAuthorizedReturns',
      'unAuthorizedReturnsAmount',
      'totalRate',
      'totalAmountRate',
      'totalDaysOver',
      'totalReturns',
      'totalReturnsAmount',
      'nsfReturns',
      'nsfReturnsAmount',
      'fedDR',
      'fedDRAmount',
      'fileName',
      'dtsCreatedAt',
      'updatedAt',
    ]),
  },
});

/** `responseData` of a sandbox test result: "either responseCode string, or error {code, message}". */
export const SANDBOX_RESPONSE_DATA = fieldsOf([], {
  conditional: ['responseCode', 'error'],
  nested: { error: fieldsOf(['code', 'message']) },
});

/** Sandbox test result. */
export const SANDBOX_RESULT = fieldsOf(['code', 'name', 'responseData', 'time', 'pass'], {
  nested: { responseData: SANDBOX_RESPONSE_DATA },
});

/** Card-add result (deprecated). */
export const CARD_ADD_RESULT = fieldsOf(
  ['last_four', 'status', 'program_id', 'name_on_card', 'available_balance', 'currency_code', 'cardId', 'additional_data'],
  {
    nested: {
      additional_data: fieldsOf([
        'account_number',
        'issue_date',
        'design_id',
        'designId',
        'card_expiration',
        'processor_token',
        'routing_number',
        'accountId',
      ]),
    },
  },
);
