import type { Db } from 'mongodb';
import { minor, toMinor } from '../../../platform/money/money.js';
import { generateAchHistory } from '../../../platform/domain/ach-history.js';
import type { AchActivity } from '../../../platform/contracts/events.js';
import { addDays } from '../../../platform/contracts/dates.js';
import { DEMO } from '../../../platform/domain/demo.js';
import {
  restrictionsCollection,
  transactionTypesCollection,
  type RestrictionDocument,
  type TransactionTypeDocument,
} from './restrictions/datasource.js';
import { kycCollections, type ApplicationDocument, type CustomerDocument, type EntityApplicationDocument } from './kyc/datasource.js';
import { returnRateCollections, type AchDayDocument } from './return-rates/datasource.js';

const ACCOUNTS = ['checking', 'savings'];

/** The platform's seven transaction types (the names the spec shows). */
export const TRANSACTION_TYPES: TransactionTypeDocument[] = [
  {
    _id: '1',
    name: '1',
    isAllowed: true,
    sourceAccountTypes: ACCOUNTS,
    destinationAccountTypes: ACCOUNTS,
    allowedTransactionCurrencies: ['USD'],
  },
  {
    _id: 'USA',
    name: 'USA',
    isAllowed: true,
    sourceAccountTypes: ACCOUNTS,
    destinationAccountTypes: null,
    allowedTransactionCurrencies: ['USD'],
  },
  {
    _id: 'USA_wire',
    name: 'USA_wire',
    isAllowed: true,
    sourceAccountTypes: ['checking'],
    destinationAccountTypes: null,
    allowedTransactionCurrencies: ['USD'],
  },
  {
    _id: 'tocard',
    name: 'tocard',
    isAllowed: true,
    sourceAccountTypes: [...ACCOUNTS, 'card'],
    destinationAccountTypes: ['card'],
    allowedTransactionCurrencies: ['USD', 'EUR', 'GBP'],
  },
  {
    _id: 'cheque',
    name: 'cheque',
    isAllowed: false,
    sourceAccountTypes: ['checking'],
    destinationAccountTypes: null,
    allowedTransactionCurrencies: ['USD'],
  },
  {
    _id: 'paypal',
    name: 'paypal',
    isAllowed: true,
    sourceAccountTypes: ACCOUNTS,
    destinationAccountTypes: null,
    allowedTransactionCurrencies: ['USD', 'EUR'],
  },
  {
    _id: 'international',
    name: 'international',
    isAllowed: true,
    sourceAccountTypes: ['checking'],
    destinationAccountTypes: null,
    allowedTransactionCurrencies: ['*'],
  },
];

const rule = (
  id: string,
  SvcUserId: string | null,
  fields: Omit<RestrictionDocument, '_id' | 'restrictionId' | 'SvcUserId'>,
): RestrictionDocument => ({ _id: id, restrictionId: id, SvcUserId, ...fields });
const open = { fromAmount: null, toAmount: null, fromAmountCurrency: null, toAmountCurrency: null };

/**
 * The demo user's restrictions, chosen to show the evaluation order: card top-ups up to 20,000
 * USD are allowed and ignore the rest (priority 0); international is refused outright (0);
 * PayPal over 500 USD is refused (1) although the general rule (1) allows up to 5,000 USD.
 */
const DEMO_RESTRICTIONS: RestrictionDocument[] = [
  rule('demo_restriction_1', DEMO.userId, {
    restrictionName: 'noInternational',
    description: 'International transfers are not allowed.',
    txnTypes: ['international'],
    transactionCurrencies: ['*'],
    ...open,
    isAllowed: false,
    isIgnoreRest: true,
    priority: 0,
  }),
  rule('demo_restriction_2', DEMO.userId, {
    restrictionName: 'domesticUpTo5000',
    description: 'Payments up to 5,000 USD.',
    txnTypes: ['*'],
    transactionCurrencies: ['USD'],
    fromAmount: minor(0),
    toAmount: minor(500_000),
    fromAmountCurrency: 'USD',
    toAmountCurrency: 'USD',
    isAllowed: true,
    isIgnoreRest: false,
    priority: 1,
  }),
  rule('demo_restriction_3', DEMO.userId, {
    restrictionName: 'cardTopUpUpTo20000',
    description: 'Card top-ups up to 20,000 USD, whatever the other limits.',
    txnTypes: ['tocard'],
    transactionCurrencies: ['USD'],
    fromAmount: minor(0),
    toAmount: minor(2_000_000),
    fromAmountCurrency: 'USD',
    toAmountCurrency: 'USD',
    isAllowed: true,
    isIgnoreRest: true,
    priority: 0,
  }),
  rule('demo_restriction_4', DEMO.userId, {
    restrictionName: 'noPaypalOver500',
    description: 'PayPal transfers over 500 USD are refused.',
    txnTypes: ['paypal'],
    transactionCurrencies: ['USD'],
    fromAmount: minor(50_001),
    toAmount: null,
    fromAmountCurrency: 'USD',
    toAmountCurrency: null,
    isAllowed: false,
    isIgnoreRest: false,
    priority: 1,
  }),
];

/** Platform defaults, for users who have no restrictions of their own. */
const DEFAULT_RESTRICTIONS: RestrictionDocument[] = [
  rule('default_restriction_1', null, {
    restrictionName: 'defaultUpTo2500',
    description: 'Payments up to 2,500 USD.',
    txnTypes: ['*'],
    transactionCurrencies: ['USD'],
    fromAmount: minor(0),
    toAmount: minor(250_000),
    fromAmountCurrency: 'USD',
    toAmountCurrency: 'USD',
    isAllowed: true,
    isIgnoreRest: false,
    priority: 1,
  }),
];

/** Seeds transaction types, default and demo restrictions, and the demo aggregator's applications in both states. Idempotent. */
export async function seedCompliance(db: Db, now = new Date()): Promise<void> {
  for (const type of TRANSACTION_TYPES)
    await transactionTypesCollection(db).updateOne({ _id: type._id }, { $setOnInsert: type }, { upsert: true });
  for (const restriction of [...DEMO_RESTRICTIONS, ...DEFAULT_RESTRICTIONS]) {
    await restrictionsCollection(db).updateOne({ _id: restriction._id }, { $setOnInsert: restriction }, { upsert: true });
  }
  const { customers, applications } = kycCollections(db);
  const aggregator = DEMO.aggregatorId;
  const person = (entityId: string, isCustomer: boolean, done: boolean): EntityApplicationDocument => ({
    entityId,
    isCustomer,
    kind: 'person',
    status: done ? 'completed' : 'pending_step_up',
    outcome: done ? 'Approved' : null,
    requiredViews: ['front', 'back', 'selfie'],
    linked: done
      ? [
          { view: 'front', documentId: `${entityId}_front`, documentType: 'idCard' },
          { view: 'back', documentId: `${entityId}_back`, documentType: 'idCard' },
          { view: 'selfie', documentId: `${entityId}_selfie`, documentType: 'selfie' },
        ]
      : [],
  });
  const demoCustomers: Array<[CustomerDocument, ApplicationDocument]> = [
    [
      {
        _id: `${aggregator}:demo_customer_1`,
        customerId: 'demo_customer_1',
        svcAggregatorId: aggregator,
        type: 'individual',
        reference: 'CUST0001',
        person: { firstName: 'Ava', lastName: 'Approved', dateOfBirth: '1985-02-01' },
        business: null,
        businessRepresentativeId: null,
        applicationId: 'demo_application_1',
        dtsCreated: now,
      },
      {
        _id: 'demo_application_1',
        applicationId: 'demo_application_1',
        svcAggregatorId: aggregator,
        customerId: 'demo_customer_1',
        reference: 'CUST0001',
        status: 'completed',
        outcome: 'Approved',
        entityApplications: [person('demo_customer_1', true, true)],
        version: 1,
        dtsCreated: now,
        dtsUpdated: now,
      },
    ],
    [
      {
        _id: `${aggregator}:demo_customer_2`,
        customerId: 'demo_customer_2',
        svcAggregatorId: aggregator,
        type: 'individual',
        reference: 'CUST0002',
        person: { firstName: 'Pete', lastName: 'Pending', dateOfBirth: '1992-07-19' },
        business: null,
        businessRepresentativeId: null,
        applicationId: 'demo_application_2',
        dtsCreated: now,
      },
      {
        _id: 'demo_application_2',
        applicationId: 'demo_application_2',
        svcAggregatorId: aggregator,
        customerId: 'demo_customer_2',
        reference: 'CUST0002',
        status: 'pending_step_up',
        outcome: null,
        entityApplications: [person('demo_customer_2', true, false)],
        version: 0,
        dtsCreated: now,
        dtsUpdated: now,
      },
    ],
  ];
  for (const [customer, application] of demoCustomers) {
    await customers.updateOne({ _id: customer._id }, { $setOnInsert: customer }, { upsert: true });
    await applications.updateOne({ _id: application._id }, { $setOnInsert: application }, { upsert: true });
  }
}

/** Daily totals of ACH activities, as applying them one by one would leave them. */
export function achDays(activities: readonly AchActivity[]): AchDayDocument[] {
  const days = new Map<string, AchDayDocument>();
  for (const a of activities) {
    const id = `${a.svcAggregatorId}:${a.entryDate}`;
    const day = days.get(id) ?? {
      _id: id,
      svcAggregatorId: a.svcAggregatorId,
      date: a.entryDate,
      debits: 0,
      debitCents: 0,
      returns: {},
      appliedEvents: [],
    };
    const cents = toMinor(a.amount, 'USD', 'amount');
    if (a.kind === 'debit') {
      day.debits += 1;
      day.debitCents += cents;
    } else {
      const code = (day.returns[a.returnCode!] ??= { count: 0, cents: 0 });
      code.count += 1;
      code.cents += cents;
    }
    day.appliedEvents.push(a.eventId);
    days.set(id, day);
  }
  return [...days.values()];
}

/** The daily ACH totals of the demo aggregator's history (the payments subgraph seeds the same debits). Idempotent. */
export async function seedAchDays(db: Db, now = new Date()): Promise<void> {
  const { days } = returnRateCollections(db);
  if (await days.findOne({ svcAggregatorId: DEMO.aggregatorId })) return;
  const history = generateAchHistory({
    svcAggregatorId: DEMO.aggregatorId,
    endDate: addDays(now.toISOString().slice(0, 10), -1),
    ...DEMO.achHistory,
  });
  await days.insertMany(achDays(history), { ordered: false });
}
