import type { Db } from 'mongodb';
import { generateAchHistory } from '../../../platform/domain/ach-history.js';
import { addDays } from '../../../platform/contracts/dates.js';
import { minor, negate, toMinor, ZERO } from '../../../platform/money/money.js';
import { DEMO } from '../../../platform/domain/demo.js';
import { insertIfAbsent } from '../../../platform/mongo/mongo.js';
import { ACH_PAYMENT_STATUSES, achPaymentsCollection, type AchPaymentDocument } from './ach/datasource.js';
import { isOneOf } from '../../../platform/contracts/own.js';
import { accountsCollection } from './accounts/datasource.js';
import { beneficiariesCollection, type BeneficiaryDocument } from './beneficiaries/datasource.js';
import { fundsTransactionsCollection, type FundsTransactionDocument } from './funds/datasource.js';
import { iouAccountsCollection, iouTransactionsCollection, type IouTransactionDocument } from './ious/datasource.js';
import { merchantsCollection } from './merchants/datasource.js';
import {
  paymentLinksCollection,
  refundsCollection,
  type PaymentLinkDocument,
  type PaymentLinkStatus,
  type RefundDocument,
} from './payment-links/datasource.js';
import { accountMonth, transactionsCollection, type TransactionDocument } from './accounts/transactions-datasource.js';

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
        balance: minor(245_075),
        availableBalance: minor(239_075),
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
    const amount = minor(isCredit ? 180_000 : 1250 + ((i * 37) % 180) * 100 + (i % 3) * 25);
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
      amount: isCredit ? amount : negate(amount),
      debit: isCredit ? ZERO : amount,
      credit: isCredit ? amount : ZERO,
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
      internal: {
        fromSvcUserId: DEMO.userId,
        txnType: isCredit ? 'USA' : 'tocard',
        sourceSvcAccountId: DEMO.accountId,
        sourceAccountSvcUserId: DEMO.userId,
      },
      dtsRecorded: dtsValue,
      dtsValue,
      dtsBooked: i === 0 ? null : dtsValue,
      dtsCompleted: i === 0 ? null : dtsValue,
      accountMonth: accountMonth(DEMO.accountId, dtsValue),
    };
    await insertIfAbsent(transactions, doc);
  }

  const blank = {
    SvcUserId: DEMO.userId,
    defaultAmount: null,
    defaultCurrency: 'USD',
    status: 'active',
    isActive: true,
    isHidden: false,
    isFavourite: false,
    isDeleted: false,
    paypalId: null,
    bankName: null,
    accountNumberLastFour: null,
    routingNumber: null,
    bic: null,
    iban: null,
    destinationName: null,
    destinationFirstName: null,
    destinationLastName: null,
    destinationPANLastFour: null,
    expiryMM: null,
    expiryYY: null,
    type: null,
    typeName: null,
    txnType: null,
    narrativeCredit: null,
    narrativeDebit: null,
    defaultSourceAccountId: DEMO.accountId,
    SvcPayeeId: null,
    dtsCreated: now,
    dtsModified: now,
  } satisfies Omit<BeneficiaryDocument, '_id' | 'SvcBeneficiaryId' | 'name'>;
  const beneficiaries: BeneficiaryDocument[] = [
    {
      ...blank,
      _id: 'demo_beneficiary_1',
      SvcBeneficiaryId: 'demo_beneficiary_1',
      name: 'Landlord LLC',
      defaultAmount: minor(145_000),
      isFavourite: true,
      bankName: 'First Example Bank',
      accountNumberLastFour: '9921',
      routingNumber: '021000021',
      destinationName: 'Landlord LLC',
      type: 'USA',
      typeName: 'Domestic transfer',
      txnType: 'USA',
      narrativeDebit: 'Rent',
    },
    {
      ...blank,
      _id: 'demo_beneficiary_2',
      SvcBeneficiaryId: 'demo_beneficiary_2',
      name: 'Sam Demo',
      paypalId: 'sam.demo@example.com',
      destinationFirstName: 'Sam',
      destinationLastName: 'Demo',
      type: 'paypal',
      typeName: 'PayPal',
      txnType: 'paypal',
      narrativeDebit: 'To Sam',
    },
    {
      ...blank,
      _id: 'demo_beneficiary_3',
      SvcBeneficiaryId: 'demo_beneficiary_3',
      name: 'Alex card',
      destinationPANLastFour: '1881',
      expiryMM: '09',
      expiryYY: '29',
      destinationFirstName: 'Alex',
      destinationLastName: 'Doe',
      type: 'tocard',
      typeName: 'Card transfer',
      txnType: 'tocard',
      narrativeDebit: 'To Alex',
    },
  ];
  for (const beneficiary of beneficiaries) {
    await insertIfAbsent(beneficiariesCollection(db), beneficiary);
  }
}

/** The demo aggregator's ACH debits of the last 90 days, with their returns (DEMO.achHistory). Idempotent. */
export async function seedAchPayments(db: Db, now = new Date()): Promise<void> {
  const payments = achPaymentsCollection(db);
  if (await payments.findOne({ svcAggregatorId: DEMO.aggregatorId })) return;
  const history = generateAchHistory({
    svcAggregatorId: DEMO.aggregatorId,
    endDate: addDays(now.toISOString().slice(0, 10), -1),
    ...DEMO.achHistory,
  });
  const returns = new Map(history.filter((a) => a.kind === 'return').map((a) => [a.svcTransactionId, a.returnCode]));
  const docs: AchPaymentDocument[] = history
    .filter((a) => a.kind === 'debit')
    .map((a) => {
      const returnCode = returns.get(a.svcTransactionId) ?? null;
      return {
        _id: a.svcTransactionId,
        svcTransactionId: a.svcTransactionId,
        svcAggregatorId: a.svcAggregatorId,
        svcMerchantId: DEMO.merchantId,
        amount: toMinor(a.amount, 'USD', 'amount'),
        currency: 'USD',
        effectiveEntryDate: a.entryDate,
        status: returnCode ? 'Returned' : 'Settled',
        returnCode,
        dtsReturned: returnCode ? now : null,
        dtsCreated: now,
        dtsUpdated: now,
      };
    });
  await payments.insertMany(docs, { ordered: false });
}

/** The demo user's IOU with the second demo user: a loan, a repayment (both accepted) and a pending loan. Idempotent. */
export async function seedIous(db: Db, now = new Date()): Promise<void> {
  const accountId = `iou_${DEMO.friendUserId}_${DEMO.userId}_USD`;
  await iouAccountsCollection(db).updateOne(
    { _id: accountId },
    {
      $setOnInsert: {
        IOUAccountId: accountId,
        SvcUserId: DEMO.friendUserId,
        otherSvcUserId: DEMO.userId,
        currency: 'USD',
        dtsModified: now,
      },
    },
    { upsert: true },
  );
  const entries: Array<[string, number, boolean, string, number]> = [
    ['demo_iou_1', 12_000, false, 'Concert tickets', 30],
    ['demo_iou_2', -2_000, false, 'Paid back part', 12],
    ['demo_iou_3', 1_500, true, 'Lunch', 1],
  ];
  for (const [id, lent, isPending, narrative, daysAgo] of entries) {
    const doc: IouTransactionDocument = {
      _id: id,
      IOUTransactionId: id,
      IOUAccountId: accountId,
      borrowerSvcUserId: DEMO.userId,
      lenderSvcUserId: DEMO.friendUserId,
      lent: minor(lent),
      currency: 'USD',
      narrativeDebit: narrative,
      narrativeCredit: narrative,
      narrative,
      dts: new Date(now.getTime() - daysAgo * DAY),
      isPending,
      isActive: true,
      attachments: null,
      images: [],
      recordedBySvcUserId: lent > 0 ? DEMO.friendUserId : DEMO.userId,
    };
    await insertIfAbsent(iouTransactionsCollection(db), doc);
  }
}

/**
 * The demo aggregator's merchant `demo_merchant` (email delivery; its webhook secret is
 * published, demo only), payment links in several states, refunds, and funds transactions.
 * Idempotent.
 */
export async function seedMerchant(db: Db, now = new Date()): Promise<void> {
  await insertIfAbsent(merchantsCollection(db), {
    _id: DEMO.merchantId,
    svcMerchantId: DEMO.merchantId,
    svcAggregatorId: DEMO.aggregatorId,
    name: 'Demo Bikes & Repairs',
    linkDelivery: 'email',
    webhookUrl: null,
    webhookSecret: DEMO.merchantWebhookSecret,
    logos: {},
    dtsCreatedAt: now,
    dtsUpdatedAt: now,
  });
  const day = (offset: number) => new Date(now.getTime() + offset * DAY).toISOString().slice(0, 10);
  const states: PaymentLinkStatus[] = ['Initiated', 'Sent', 'Cancelled', 'Expired', 'Processing', 'Completed', 'Settled', 'Completed'];
  for (const [i, status] of states.entries()) {
    const id = `demo_link_${i + 1}`;
    const created = new Date(now.getTime() - (states.length - i) * 3 * DAY);
    const history = (
      [
        'Initiated',
        ...(status === 'Initiated'
          ? []
          : status === 'Cancelled'
            ? ['Cancelled']
            : status === 'Sent'
              ? ['Sent']
              : status === 'Expired'
                ? ['Sent', 'Expired']
                : [
                    'Sent',
                    'Processing',
                    ...(status === 'Processing' ? [] : status === 'Settled' ? ['Completed', 'Settled'] : ['Completed']),
                  ]),
      ] as PaymentLinkStatus[]
    ).map((step, n) => {
      const at = new Date(created.getTime() + n * 3600 * 1000);
      return {
        _id: `${id}_h${n}`,
        initiatorId:
          step === 'Expired'
            ? 'system'
            : step === 'Initiated' || step === 'Sent' || step === 'Cancelled'
              ? DEMO.merchantId
              : 'demo_customer',
        initiatorType:
          step === 'Expired'
            ? ('system' as const)
            : step === 'Initiated' || step === 'Sent' || step === 'Cancelled'
              ? ('merchant' as const)
              : ('customer' as const),
        status: step,
        dtsCreatedAt: at,
        dtsUpdatedAt: at,
      };
    });
    const sent = history.some((h) => h.status === 'Sent');
    const code = status === 'Sent' ? DEMO.sentLinkCode : `demo-link-code-${i + 1}`;
    const link: PaymentLinkDocument = {
      _id: id,
      svcTransactionId: id,
      svcAggregatorId: DEMO.aggregatorId,
      svcMerchantId: DEMO.merchantId,
      svcMerchantRef: `INV${1000 + i}`,
      payerName: ['Robin Rider', 'Alex Cyclist', 'Jo Wheeler'][i % 3]!,
      invoiceNumber: `2026-${String(101 + i)}`,
      amount: minor((45 + i * 20) * 100),
      currency: 'USD',
      dueDate: day(10 - i),
      description: ['Tune-up', 'New tyres', 'Brake service', 'Chain replacement'][i % 4]!,
      status,
      fields: [
        { index: 0, code: 'firstName', label: 'First name', value: 'Robin' },
        { index: 1, code: 'email', label: 'Email', value: `customer${i + 1}@example.com` },
      ],
      availablePaymentType: i % 2 === 0 ? ['card', 'ach'] : ['ach'],
      statusChangeHistory: history,
      dtsCreatedAt: created,
      dtsUpdatedAt: history.at(-1)!.dtsUpdatedAt,
      dtsExpiredAt: sent ? new Date(status === 'Expired' ? now.getTime() - DAY : now.getTime() + 7 * DAY) : null,
      link: sent ? code : null,
      url: sent ? `http://localhost:8080/pay?link=${code}` : null,
      refunded: ZERO,
      needsDelivery: false,
    };
    await insertIfAbsent(paymentLinksCollection(db), link);
  }
  const refunds: Array<[string, string, 'card' | 'ach', PaymentLinkStatus, number]> = [
    ['demo_refund_1', 'demo_link_6', 'ach', 'Processing', 2_000],
    ['demo_refund_2', 'demo_link_7', 'ach', 'Settled', 3_000],
    ['demo_refund_3', 'demo_link_8', 'card', 'Completed', 1_500],
    ['demo_refund_4', 'demo_link_8', 'ach', 'Returned', 1_000],
  ];
  for (const [id, parent, paymentType, status, cents] of refunds) {
    const amount = minor(cents);
    const link = (await paymentLinksCollection(db).findOne({ _id: parent }))!;
    const created = new Date(now.getTime() - (refunds.length - refunds.findIndex((r) => r[0] === id)) * DAY);
    const ach: RefundDocument['ach'] =
      paymentType === 'ach'
        ? {
            payment: {
              reference: id,
              effectiveEntryDate: created.toISOString().slice(0, 10),
              companyEntryDescription: 'REFUND',
              standardEntryClassCode: 'PPD',
              individualName: link.payerName!.slice(0, 22),
              routingNumber: '021000021',
              DFIAccountNumberLastFour: '6789',
              accountType: 'checking',
              transactionType: 'credit',
              amount,
              currency: 'USD',
              webhookUrl: null,
            },
            // The demo's ACH refunds stand where their payment does.
            result: { status: isOneOf(ACH_PAYMENT_STATUSES, status) ? status : 'Processing', dtsCreatedAt: created },
          }
        : null;
    const refund: RefundDocument = {
      _id: id,
      svcTransactionId: id,
      svcAggregatorId: DEMO.aggregatorId,
      svcMerchantId: DEMO.merchantId,
      svcParentId: parent,
      status,
      statusChangeHistory: [
        {
          _id: `${id}_h0`,
          initiatorId: DEMO.merchantId,
          initiatorType: 'merchant',
          status: 'Processing',
          dtsCreatedAt: created,
          dtsUpdatedAt: created,
        },
        ...(status === 'Processing'
          ? []
          : [
              {
                _id: `${id}_h1`,
                initiatorId: 'system',
                initiatorType: 'system' as const,
                status,
                dtsCreatedAt: created,
                dtsUpdatedAt: created,
              },
            ]),
      ],
      paymentType,
      ach,
      amount,
      currency: 'USD',
      svcMerchantRef: link.svcMerchantRef,
      payerName: link.payerName,
      invoiceNumber: link.invoiceNumber,
      dueDate: link.dueDate,
      dtsCreatedAt: created,
      dtsUpdatedAt: created,
    };
    if (await insertIfAbsent(refundsCollection(db), refund))
      await paymentLinksCollection(db).updateOne({ _id: parent }, { $inc: { refunded: amount } });
  }
  for (let i = 0; i < 5; i += 1) {
    const id = `demo_funds_${i + 1}`;
    const doc: FundsTransactionDocument = {
      _id: id,
      svcFundsId: id,
      svcAggregatorId: DEMO.aggregatorId,
      reference: `FUNDREF${1000 + i}`,
      type: i % 2 === 0 ? 'debit' : 'credit',
      svcCardId: DEMO.cardIds[i % 2]!,
      svcStatus: 'Complete',
      boTransId: `BO${70000 + i}`,
      arn: `7461${String(1000000000 + i * 7919)}`,
      fee: i % 2 === 0 ? minor(50) : ZERO,
      balance: minor((1000 - i * 25) * 100),
      lastDepositAmount: minor(25_000),
      ledgerBalance: minor((1000 - i * 25) * 100),
      dtsCreatedAt: new Date(now.getTime() - (5 - i) * DAY),
    };
    await insertIfAbsent(fundsTransactionsCollection(db), doc);
  }
}
