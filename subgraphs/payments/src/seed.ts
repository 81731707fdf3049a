import type { Db } from 'mongodb';
import { addDays, generateAchHistory } from '../../../platform/ach.js';
import { DEMO } from '../../../platform/demo.js';
import { achPaymentsCollection, type AchPaymentDocument } from './datasources/ach.js';
import { accountsCollection } from './datasources/accounts.js';
import { beneficiariesCollection, type BeneficiaryDocument } from './datasources/beneficiaries.js';
import { transactionsCollection, type TransactionDocument } from './datasources/transactions.js';

const MERCHANTS = ['Corner Grocery', 'City Transit', 'Coffee House', 'Book Nook', 'Pharmacy Plus', 'Gas & Go', 'Cinema 8', 'Hardware Hub'];
const DAY = 24 * 3600 * 1000;

/**
 * Seeds the demo account with 40 transactions spread over the last 14 months (so the
 * "last 30 or last 12 months" rule has records on both sides of it) and three beneficiaries.
 * Idempotent: existing records are kept.
 */
export async function seedPayments(db: Db, now = new Date()): Promise<void> {
  await accountsCollection(db).updateOne(
    { _id: DEMO.accountId },
    {
      $setOnInsert: {
        SvcAccountId: DEMO.accountId,
        SvcUserId: DEMO.userId,
        type: 'checking',
        name: 'Everyday checking',
        currency: 'USD',
        accountNumberLastFour: '3307',
        balance: 2450.75,
        availableBalance: 2390.75,
        dtsOpened: new Date(now.getTime() - 420 * DAY),
      },
    },
    { upsert: true },
  );

  const transactions = transactionsCollection(db);
  for (let i = 0; i < 40; i += 1) {
    // Evenly over 14 months (about 425 days), newest first.
    const dtsValue = new Date(now.getTime() - Math.round((i * 425) / 39) * DAY - i * 3600 * 1000);
    const isCredit = i % 7 === 3;
    const amount = isCredit ? 1800 : Number((12.5 + ((i * 37) % 180) + (i % 3) * 0.25).toFixed(2));
    const id = `demo_txn_${String(i + 1).padStart(2, '0')}`;
    const doc: TransactionDocument = {
      _id: id,
      transactionId: id,
      SvcAccountId: DEMO.accountId,
      SvcUserId: DEMO.userId,
      SvcCardId: isCredit ? null : DEMO.cardIds[0],
      transactionIdBO: `BO-TXN-${5000 + i}`,
      debitTransactionId: isCredit ? null : `D${5000 + i}`,
      creditTransactionId: isCredit ? `C${5000 + i}` : null,
      sourceSvcAccountId: isCredit ? null : DEMO.accountId,
      destinationSvcAccountId: isCredit ? DEMO.accountId : null,
      amount: isCredit ? amount : -amount,
      debit: isCredit ? 0 : amount,
      credit: isCredit ? amount : 0,
      currency: 'USD',
      transactionState: i === 0 ? 'pending' : 'confirmed',
      isPending: i === 0,
      isComplete: i !== 0,
      isDeclined: false,
      txnType: isCredit ? 'USA' : 'tocard',
      typeName: isCredit ? 'Salary' : 'Card payment',
      narrative: isCredit ? 'Salary ACME Corp' : MERCHANTS[i % MERCHANTS.length]!,
      narrativeSource: isCredit ? 'ACME Corp' : 'Everyday checking',
      narrativeDestination: isCredit ? 'Everyday checking' : MERCHANTS[i % MERCHANTS.length]!,
      reference: `REF${100000 + i}`,
      attachments: null,
      labels: isCredit ? ['income'] : [],
      details: { memos: [] },
      internal: { fromSvcUserId: DEMO.userId, txnType: isCredit ? 'USA' : 'tocard', sourceSvcAccountId: DEMO.accountId, sourceAccountSvcUserId: DEMO.userId },
      dtsRecorded: dtsValue,
      dtsValue,
      dtsBooked: i === 0 ? null : dtsValue,
      dtsCompleted: i === 0 ? null : dtsValue,
    };
    await transactions.updateOne({ _id: id }, { $setOnInsert: doc }, { upsert: true });
  }

  const blank = {
    SvcUserId: DEMO.userId, defaultAmount: null, defaultCurrency: 'USD', status: 'active', isActive: true, isHidden: false,
    isFavourite: false, isDeleted: false, paypalId: null, bankName: null, accountNumberLastFour: null, routingNumber: null,
    bic: null, iban: null, destinationName: null, destinationFirstName: null, destinationLastName: null,
    destinationPANLastFour: null, expiryMM: null, expiryYY: null, type: null, typeName: null, txnType: null,
    narrativeCredit: null, narrativeDebit: null, defaultSourceAccountId: DEMO.accountId, SvcPayeeId: null, dtsCreated: now, dtsModified: now,
  } satisfies Omit<BeneficiaryDocument, '_id' | 'SvcBeneficiaryId' | 'name'>;
  const beneficiaries: BeneficiaryDocument[] = [
    { ...blank, _id: 'demo_beneficiary_1', SvcBeneficiaryId: 'demo_beneficiary_1', name: 'Landlord LLC', defaultAmount: 1450, isFavourite: true, bankName: 'First Example Bank', accountNumberLastFour: '9921', routingNumber: '021000021', destinationName: 'Landlord LLC', type: 'USA', typeName: 'Domestic transfer', txnType: 'USA', narrativeDebit: 'Rent' },
    { ...blank, _id: 'demo_beneficiary_2', SvcBeneficiaryId: 'demo_beneficiary_2', name: 'Sam Demo', paypalId: 'sam.demo@example.com', destinationFirstName: 'Sam', destinationLastName: 'Demo', type: 'paypal', typeName: 'PayPal', txnType: 'paypal', narrativeDebit: 'To Sam' },
    { ...blank, _id: 'demo_beneficiary_3', SvcBeneficiaryId: 'demo_beneficiary_3', name: 'Alex card', destinationPANLastFour: '1881', expiryMM: '09', expiryYY: '29', destinationFirstName: 'Alex', destinationLastName: 'Doe', type: 'tocard', typeName: 'Card transfer', txnType: 'tocard', narrativeDebit: 'To Alex' },
  ];
  for (const beneficiary of beneficiaries) {
    await beneficiariesCollection(db).updateOne({ _id: beneficiary._id }, { $setOnInsert: beneficiary }, { upsert: true });
  }
}

/** The demo aggregator's ACH debits of the last 90 days, with their returns (DEMO.achHistory). Idempotent. */
export async function seedAchPayments(db: Db, now = new Date()): Promise<void> {
  const payments = achPaymentsCollection(db);
  if (await payments.findOne({ svcAggregatorId: DEMO.aggregatorId })) return;
  const history = generateAchHistory({ svcAggregatorId: DEMO.aggregatorId, endDate: addDays(now.toISOString().slice(0, 10), -1), ...DEMO.achHistory });
  const returns = new Map(history.filter((a) => a.kind === 'return').map((a) => [a.svcTransactionId, a.returnCode]));
  const docs: AchPaymentDocument[] = history
    .filter((a) => a.kind === 'debit')
    .map((a) => {
      const returnCode = returns.get(a.svcTransactionId) ?? null;
      return {
        _id: a.svcTransactionId, svcTransactionId: a.svcTransactionId, svcAggregatorId: a.svcAggregatorId, svcMerchantId: 'demo_merchant_1',
        amount: a.amount, currency: 'USD', effectiveEntryDate: a.entryDate, status: returnCode ? 'Returned' : 'Settled', returnCode,
        dtsReturned: returnCode ? now : null, dtsCreated: now, dtsUpdated: now,
      };
    });
  await payments.insertMany(docs, { ordered: false });
}
