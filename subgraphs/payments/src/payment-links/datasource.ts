import type { Collection, Db } from 'mongodb';
import type { MinorUnits } from '../../../../platform/money/money.js';
import type { AchPaymentDocument } from '../ach/datasource.js';

/** The payment-link statuses of the aggregator spec. */
export const PAYMENT_LINK_STATUSES = [
  'Initiated',
  'Sent',
  'Cancelled',
  'Rejected',
  'Error',
  'Expired',
  'Processing',
  'SentToPay',
  'Completed',
  'Settled',
  'Returned',
  'Declined',
] as const;
export type PaymentLinkStatus = (typeof PAYMENT_LINK_STATUSES)[number];

export interface StatusChangeDocument {
  _id: string;
  initiatorId: string;
  initiatorType: 'merchant' | 'customer' | 'system';
  status: PaymentLinkStatus;
  dtsCreatedAt: Date;
  dtsUpdatedAt: Date;
}

export interface PaymentLinkField {
  index: number;
  code: string;
  label: string;
  value: string;
}

/** A payment link. `link` is the unguessable code in the customer's URL; it exists once sent. */
export interface PaymentLinkDocument {
  _id: string;
  svcTransactionId: string;
  svcAggregatorId: string;
  svcMerchantId: string;
  svcMerchantRef: string | null;
  payerName: string | null;
  invoiceNumber: string | null;
  /** In `currency`'s minor units, as every stored amount. */
  amount: MinorUnits;
  currency: string;
  dueDate: string | null;
  dtsExpiredAt: Date | null;
  description: string | null;
  status: PaymentLinkStatus;
  fields: PaymentLinkField[];
  availablePaymentType: Array<'card' | 'ach'>;
  statusChangeHistory: StatusChangeDocument[];
  dtsCreatedAt: Date;
  dtsUpdatedAt: Date;
  link: string | null;
  url: string | null;
  /** The total refunded so far, in the link's minor units. */
  refunded: MinorUnits;
  /** Set with Sent, cleared once the link's email or webhook is stored for delivery: a crash between the two is repaired. */
  needsDelivery: boolean;
  /** Ids of the refunds issued, pushed in the same update that reserves their amount. */
  refundIds?: string[];
}

/** An ACH payment instruction as stored: the DFI account number only by its last four digits. */
interface AchInstructionDocument {
  reference: string;
  effectiveEntryDate: string;
  companyEntryDescription: string;
  standardEntryClassCode: string;
  individualName: string;
  routingNumber: string;
  DFIAccountNumberLastFour: string;
  accountType: 'checking' | 'savings';
  transactionType: 'credit' | 'debit';
  amount: MinorUnits;
  currency: string;
  webhookUrl: string | null;
}

/** A refund of a payment link, with the refunded link's details copied for the list's filters. */
export interface RefundDocument {
  _id: string;
  svcTransactionId: string;
  svcAggregatorId: string;
  svcMerchantId: string;
  svcParentId: string;
  status: PaymentLinkStatus;
  statusChangeHistory: StatusChangeDocument[];
  paymentType: 'card' | 'ach';
  ach: { payment: AchInstructionDocument; result: { status: AchPaymentDocument['status']; dtsCreatedAt: Date } | null } | null;
  amount: MinorUnits;
  currency: string;
  svcMerchantRef: string | null;
  payerName: string | null;
  invoiceNumber: string | null;
  dueDate: string | null;
  dtsCreatedAt: Date;
  dtsUpdatedAt: Date;
}

export function paymentLinksCollection(db: Db): Collection<PaymentLinkDocument> {
  return db.collection<PaymentLinkDocument>('paymentLinks');
}

export function refundsCollection(db: Db): Collection<RefundDocument> {
  return db.collection<RefundDocument>('refunds');
}

/** The indexes of every query on these collections. */
export async function createPaymentLinkIndexes(db: Db): Promise<void> {
  await paymentLinksCollection(db).createIndex({ svcMerchantId: 1, dtsCreatedAt: -1 });
  // eslint-disable-next-line @typescript-eslint/no-deprecated -- the field `link`, not String.prototype.link: the index type's union includes string.
  await paymentLinksCollection(db).createIndex({ link: 1 });
  await paymentLinksCollection(db).createIndex({ status: 1, dtsExpiredAt: 1 });
  // Counting an aggregator's links by status; a merchant's are counted through the first index.
  await paymentLinksCollection(db).createIndex({ svcAggregatorId: 1, status: 1 });
  await refundsCollection(db).createIndex({ svcAggregatorId: 1, dtsCreatedAt: -1 });
}
