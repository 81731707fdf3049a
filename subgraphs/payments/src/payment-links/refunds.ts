import type { Db, Filter } from 'mongodb';
import { PAYMENTS_LIST_CAPS } from '../list-caps.js';
import { appError, ErrorCode } from '../../../../platform/contracts/errors.js';
import { checkPage, readPage } from '../../../../platform/graphql/paging.js';
import { isIsoDate } from '../../../../platform/contracts/dates.js';
import { newId } from '../../../../platform/security/secrets.js';
import { checkString, ID_RULE, REFERENCE_RULE, required, ROUTING_NUMBER_RULE } from '../../../../platform/security/validate.js';
import { amountBound, canonicalDecimal, checkAmount, fromMinor, minor } from '../../../../platform/money/money.js';
import {
  PAYMENT_LINK_STATUSES,
  paymentLinksCollection,
  refundsCollection,
  type PaymentLinkStatus,
  type RefundDocument,
} from './datasource.js';
import { checkWebhookUrl } from '../merchants/merchants.js';

/** Link statuses a refund may be issued from: the money has arrived. */
const REFUNDABLE: readonly PaymentLinkStatus[] = ['Completed', 'Settled'];

/** A YYYY-MM-DD or ISO 8601 date-time bound of a date filter: from the start of a day, or to its end. */
function dateBound(value: unknown, field: string, end: boolean): Date | null {
  const text = checkString(value, field);
  if (!text) return null;
  const date = isIsoDate(text) ? new Date(`${text}T00:00:00.000Z`) : new Date(text);
  if (Number.isNaN(date.getTime()) || !/^\d{4}-\d{2}-\d{2}/.test(text))
    throw appError(ErrorCode.VALIDATION_FAILED, `${field} must be an ISO date (YYYY-MM-DD) or date-time.`, { field });
  return end && isIsoDate(text) ? new Date(date.getTime() + 24 * 3600 * 1000 - 1) : date;
}

function dayBound(value: unknown, field: string): string | null {
  const text = checkString(value, field);
  if (!text) return null;
  const day = text.slice(0, 10);
  if (!isIsoDate(day)) throw appError(ErrorCode.VALIDATION_FAILED, `${field} must be an ISO date (YYYY-MM-DD).`, { field });
  return day;
}

const MAX_IDS = Math.min(PAYMENTS_LIST_CAPS['RefundFilter.svcMerchantIds'], PAYMENTS_LIST_CAPS['RefundFilter.svcTransactionIds']);

function idList(value: unknown, field: string): string[] | null {
  if (value === null || value === undefined) return null;
  const list = value as unknown[];
  if (list.length > MAX_IDS) throw appError(ErrorCode.VALIDATION_FAILED, `${field} may hold at most ${MAX_IDS} ids.`, { field });
  return list.map((id, i) => checkString(id, `${field}[${i}]`, ID_RULE)!);
}

/** The filters of `POST /payment-link/payment/refund-list`, validated into one query of the aggregator's refunds. */
function refundFilter(svcAggregatorId: string, input: Record<string, unknown>): Filter<RefundDocument> {
  const and: Array<Filter<RefundDocument>> = [{ svcAggregatorId }];
  const id = checkString(input.svcTransactionId, 'svcTransactionId', ID_RULE);
  if (id) and.push({ $or: [{ _id: id }, { svcParentId: id }] });
  const ids = idList(input.svcTransactionIds, 'svcTransactionIds');
  if (ids) and.push({ $or: [{ _id: { $in: ids } }, { svcParentId: { $in: ids } }] });
  if (input.status !== null && input.status !== undefined) {
    if (!(PAYMENT_LINK_STATUSES as readonly unknown[]).includes(input.status))
      throw appError(ErrorCode.VALIDATION_FAILED, `status must be one of ${PAYMENT_LINK_STATUSES.join(', ')}.`, { field: 'status' });
    and.push({ status: input.status });
  }
  const payerName = checkString(input.payerName, 'payerName', { max: 100 });
  if (payerName) and.push({ payerName });
  const createdFrom = dateBound(input.dateCreateFrom, 'dateCreateFrom', false);
  const createdTo = dateBound(input.dateCreateTo, 'dateCreateTo', true);
  if (createdFrom) and.push({ dtsCreatedAt: { $gte: createdFrom } });
  if (createdTo) and.push({ dtsCreatedAt: { $lte: createdTo } });
  const dueFrom = dayBound(input.dueDateFrom, 'dueDateFrom');
  const dueTo = dayBound(input.dueDateTo, 'dueDateTo');
  if (dueFrom) and.push({ dueDate: { $gte: dueFrom } });
  if (dueTo) and.push({ dueDate: { $lte: dueTo } });
  const invoiceNumber = checkString(input.invoiceNumber, 'invoiceNumber', {
    max: 50,
    pattern: /^[^<>]*$/,
    patternText: 'text without < or >',
  });
  if (invoiceNumber) and.push({ invoiceNumber });
  for (const [field, op] of [
    ['amountFrom', '$gte'],
    ['amountTo', '$lte'],
  ] as const) {
    const value = input[field];
    if (value === null || value === undefined) continue;
    const decimal = canonicalDecimal(value);
    if (decimal === null || decimal.startsWith('-'))
      throw appError(ErrorCode.VALIDATION_FAILED, `${field} must be a decimal amount from 0.`, { field });
    and.push(amountBound('amount', op, decimal));
  }
  if (input.paymentType !== null && input.paymentType !== undefined) {
    if (input.paymentType !== 'card' && input.paymentType !== 'ach')
      throw appError(ErrorCode.VALIDATION_FAILED, 'paymentType must be card or ach.', { field: 'paymentType' });
    and.push({ paymentType: input.paymentType });
  }
  const merchantId = checkString(input.svcMerchantId, 'svcMerchantId', ID_RULE);
  if (merchantId) and.push({ svcMerchantId: merchantId });
  const merchantIds = idList(input.svcMerchantIds, 'svcMerchantIds');
  if (merchantIds) and.push({ svcMerchantId: { $in: merchantIds } });
  const merchantRef = checkString(input.svcMerchantRef, 'svcMerchantRef', REFERENCE_RULE);
  if (merchantRef) and.push({ svcMerchantRef: merchantRef });
  return and.length === 1 ? and[0]! : { $and: and };
}

/** Refunds of payment links: issued by merchants, listed by aggregators. */
export class Refunds {
  constructor(
    private readonly db: Db,
    private readonly allowInternalWebhooks: boolean,
  ) {}

  /** One page of the aggregator's refunds, newest first: one query (a record more than asked tells `more`). */
  list(svcAggregatorId: string, input: Record<string, unknown>) {
    const page = checkPage({ numberOfRecords: input.numberOfRecords as number | null, skipRecords: input.skipRecords as number | null });
    return readPage(refundsCollection(this.db).find(refundFilter(svcAggregatorId, input)).sort({ dtsCreatedAt: -1, _id: -1 }), page);
  }

  /**
   * Issues a refund of a Completed or Settled link of the merchant. The refunded total is raised
   * in one conditional update that keeps it within the link's amount, so racing refunds cannot
   * refund more than was paid.
   */
  async issue(merchant: { svcMerchantId: string; svcAggregatorId: string }, input: Record<string, unknown>): Promise<RefundDocument> {
    const id = checkString(required(input.svcTransactionId, 'svcTransactionId'), 'svcTransactionId', ID_RULE)!;
    const links = paymentLinksCollection(this.db);
    const link = await links.findOne({ _id: id });
    if (!link || link.svcMerchantId !== merchant.svcMerchantId)
      throw appError(ErrorCode.NOT_FOUND, `Payment link ${id} does not exist.`, { field: 'svcTransactionId' });
    if (!REFUNDABLE.includes(link.status))
      throw appError(ErrorCode.CONFLICT, `The payment link is ${link.status}; only ${REFUNDABLE.join(' or ')} links can be refunded.`, {
        field: 'svcTransactionId',
      });
    const requested = input.amount as string | null | undefined;
    const amount =
      requested === null || requested === undefined ? minor(link.amount - link.refunded) : checkAmount(requested, link.currency, 'amount');
    if (!(amount > 0))
      throw appError(ErrorCode.VALIDATION_FAILED, 'amount must be positive: the link is refunded in full.', { field: 'amount' });
    const paymentType = required(input.paymentType as string | null | undefined, 'paymentType');
    if (paymentType !== 'card' && paymentType !== 'ach')
      throw appError(ErrorCode.VALIDATION_FAILED, 'paymentType must be card or ach.', { field: 'paymentType' });
    if (!link.availablePaymentType.includes(paymentType))
      throw appError(ErrorCode.VALIDATION_FAILED, `The link was not payable by ${paymentType}.`, { field: 'paymentType' });
    const now = new Date();
    const refundId = newId('rf_');
    let ach: RefundDocument['ach'] = null;
    if (paymentType === 'ach') {
      const instruction = required(input.ach as Record<string, unknown> | null | undefined, 'ach');
      const individualName = checkString(required(instruction.individualName, 'ach.individualName'), 'ach.individualName', {
        min: 1,
        max: 22,
        safeText: true,
      })!;
      const routingNumber = checkString(
        required(instruction.routingNumber, 'ach.routingNumber'),
        'ach.routingNumber',
        ROUTING_NUMBER_RULE,
      )!;
      const account = checkString(required(instruction.DFIAccountNumber, 'ach.DFIAccountNumber'), 'ach.DFIAccountNumber', {
        pattern: /^\d{4,17}$/,
        patternText: '4-17 digits',
      })!;
      const accountType = instruction.accountType ?? 'checking';
      if (accountType !== 'checking' && accountType !== 'savings')
        throw appError(ErrorCode.VALIDATION_FAILED, 'ach.accountType must be checking or savings.', { field: 'ach.accountType' });
      const description =
        checkString(instruction.companyEntryDescription, 'ach.companyEntryDescription', {
          min: 1,
          max: 10,
          pattern: /^[A-Za-z0-9 ]+$/,
          patternText: 'up to 10 letters, digits or spaces',
        }) ?? 'REFUND';
      const entryDate = new Date(now.getTime() + 24 * 3600 * 1000).toISOString().slice(0, 10);
      ach = {
        payment: {
          reference: refundId,
          effectiveEntryDate: entryDate,
          companyEntryDescription: description,
          standardEntryClassCode: 'PPD',
          individualName,
          routingNumber,
          DFIAccountNumberLastFour: account.slice(-4),
          accountType,
          transactionType: 'credit',
          amount,
          currency: link.currency,
          webhookUrl: await checkWebhookUrl(instruction.webhookUrl, 'ach.webhookUrl', this.allowInternalWebhooks),
        },
        result: { status: 'Processing', dtsCreatedAt: now },
      };
    }
    const raised = await links.updateOne(
      { _id: id, status: { $in: [...REFUNDABLE] }, refunded: { $lte: minor(link.amount - amount) } },
      { $inc: { refunded: amount }, $push: { refundIds: refundId }, $set: { dtsUpdatedAt: now } },
    );
    if (raised.modifiedCount !== 1)
      throw appError(
        ErrorCode.CONFLICT,
        `The refunds would exceed the link's amount of ${fromMinor(link.amount, link.currency)} ${link.currency}.`,
        { field: 'amount' },
      );
    const refund: RefundDocument = {
      _id: refundId,
      svcTransactionId: refundId,
      svcAggregatorId: link.svcAggregatorId,
      svcMerchantId: link.svcMerchantId,
      svcParentId: link._id,
      status: 'Processing',
      statusChangeHistory: [
        {
          _id: newId('sch_'),
          initiatorId: merchant.svcMerchantId,
          initiatorType: 'merchant',
          status: 'Processing',
          dtsCreatedAt: now,
          dtsUpdatedAt: now,
        },
      ],
      paymentType,
      ach,
      amount,
      currency: link.currency,
      svcMerchantRef: link.svcMerchantRef,
      payerName: link.payerName,
      invoiceNumber: link.invoiceNumber,
      dueDate: link.dueDate,
      dtsCreatedAt: now,
      dtsUpdatedAt: now,
    };
    await refundsCollection(this.db).insertOne(refund);
    return refund;
  }
}
