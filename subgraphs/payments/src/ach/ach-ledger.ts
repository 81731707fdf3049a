import { MongoServerError, type Collection, type Db } from 'mongodb';
import type { AchActivity } from '../../../../platform/contracts/events.js';
import { appError, ErrorCode } from '../../../../platform/contracts/errors.js';
import type { GraphClient } from '../../../../platform/contracts/graph.js';
import type { Logger } from '../../../../platform/runtime/logger.js';
import { graphForwarder, recordEvent, type Dispatcher, type OutboxEvent } from '../../../../platform/messaging/outbox.js';
import { isIsoDate } from '../../../../platform/contracts/dates.js';
import { checkString, ID_RULE, required, RETURN_CODE_PATTERN } from '../../../../platform/security/validate.js';
import { checkAmount, fromMinor, toJsonNumber } from '../../../../platform/money/money.js';
import { achPaymentsCollection, type AchPaymentDocument } from './datasource.js';
import { merchantsCollection } from '../merchants/datasource.js';
import type { Deliveries } from '../merchants/deliveries.js';
import { checkWebhookUrl } from '../merchants/merchants.js';

/**
 * Events per forwarding call. Small enough that compliance applies a batch well within the graph
 * client's timeout even on the embedded FerretDB, where each event costs up to about a second.
 */
const FORWARD_BATCH = 20;

const APPLY = 'mutation ($activities: [AchActivityInput!]!) { applyAchActivity(activities: $activities) { applied } }';

/** Who may see an ACH payment's events: its aggregator, and its merchant when it has one. */
const audienceOf = (payment: AchPaymentDocument) => ({
  svcAggregatorId: payment.svcAggregatorId,
  ...(payment.svcMerchantId ? { svcMerchantId: payment.svcMerchantId } : {}),
});

/** ACH debits and their returns; each is an `ach.debit` or `ach.return` event in the outbox. */
export class AchLedger {
  private readonly payments: Collection<AchPaymentDocument>;

  constructor(
    private readonly db: Db,
    private readonly logger: Logger,
    private readonly deliveries: Deliveries,
    private readonly allowInternalWebhooks: boolean,
  ) {
    this.payments = achPaymentsCollection(db);
  }

  /** Posts a status change to the payment's webhookUrl (stored, signed with its merchant's secret, retried). */
  private async notify(payment: AchPaymentDocument): Promise<void> {
    if (!payment.webhookUrl || !payment.svcMerchantId) return;
    await this.deliveries
      .enqueue({
        _id: `dlv_${payment._id}_${payment.status.toLowerCase()}`,
        kind: 'webhook',
        svcMerchantId: payment.svcMerchantId,
        svcAggregatorId: payment.svcAggregatorId,
        eventType: 'ach_payment.updated',
        to: payment.webhookUrl,
        payload: {
          type: 'ach_payment.updated',
          timestamp: new Date().toISOString(),
          data: {
            svcTransactionId: payment.svcTransactionId,
            svcAggregatorId: payment.svcAggregatorId,
            svcMerchantId: payment.svcMerchantId,
            status: payment.status,
            returnCode: payment.returnCode,
            amount: toJsonNumber(payment.amount, payment.currency),
            currency: payment.currency,
            effectiveEntryDate: payment.effectiveEntryDate,
          },
        },
      })
      .catch((error: unknown) =>
        this.logger.warn('ach webhook not stored', { svcTransactionId: payment._id, error: (error as Error).message }),
      );
  }

  /** Records the settlement of a Processing debit (a conditional update). */
  async recordSettlement(svcTransactionId: string) {
    checkString(svcTransactionId, 'svcTransactionId', ID_RULE);
    const now = new Date();
    const settled = await this.payments.findOneAndUpdate(
      { _id: svcTransactionId, status: 'Processing' },
      { $set: { status: 'Settled', dtsUpdated: now } },
      { returnDocument: 'after' },
    );
    if (!settled) {
      const exists = await this.payments.findOne({ _id: svcTransactionId });
      if (!exists) throw appError(ErrorCode.NOT_FOUND, `No ACH payment ${svcTransactionId}.`, { field: 'svcTransactionId' });
      throw appError(ErrorCode.CONFLICT, `ACH payment ${svcTransactionId} is ${exists.status}; only a Processing payment settles.`, {
        field: 'svcTransactionId',
      });
    }
    await recordEvent(this.db, 'ach.settled', audienceOf(settled), { svcTransactionId, status: 'Settled' }, `${svcTransactionId}:settled`);
    await this.notify(settled);
    return settled;
  }

  async recordDebit(input: {
    svcTransactionId?: unknown;
    svcAggregatorId?: unknown;
    svcMerchantId?: unknown;
    amount?: unknown;
    currency?: unknown;
    effectiveEntryDate?: unknown;
    webhookUrl?: unknown;
  }) {
    const svcTransactionId = checkString(required(input.svcTransactionId, 'svcTransactionId'), 'svcTransactionId', ID_RULE)!;
    const svcAggregatorId = checkString(required(input.svcAggregatorId, 'svcAggregatorId'), 'svcAggregatorId', ID_RULE)!;
    const svcMerchantId = checkString(input.svcMerchantId, 'svcMerchantId', ID_RULE) ?? null;
    const effectiveEntryDate = checkString(required(input.effectiveEntryDate, 'effectiveEntryDate'), 'effectiveEntryDate')!;
    if (!isIsoDate(effectiveEntryDate))
      throw appError(ErrorCode.VALIDATION_FAILED, 'effectiveEntryDate must be a date written YYYY-MM-DD.', { field: 'effectiveEntryDate' });
    const currency = checkString(input.currency ?? 'USD', 'currency', { pattern: /^USD$/, patternText: 'USD (ACH moves US dollars)' })!;
    const amount = checkAmount(input.amount, currency, 'amount');
    const webhookUrl = await checkWebhookUrl(input.webhookUrl, 'webhookUrl', this.allowInternalWebhooks);
    if (webhookUrl) {
      // The merchant's secret signs the payment's webhooks, so the merchant must be the aggregator's.
      if (!svcMerchantId)
        throw appError(ErrorCode.REQUIRED_ELEMENT_MISSING, 'svcMerchantId is required with a webhookUrl (its webhook secret signs them).', {
          field: 'svcMerchantId',
        });
      const merchant = await merchantsCollection(this.db).findOne({ _id: svcMerchantId, svcAggregatorId });
      if (!merchant)
        throw appError(ErrorCode.NOT_FOUND, `Merchant ${svcMerchantId} of ${svcAggregatorId} does not exist.`, { field: 'svcMerchantId' });
    }
    const now = new Date();
    const payment: AchPaymentDocument = {
      _id: svcTransactionId,
      svcTransactionId,
      svcAggregatorId,
      svcMerchantId,
      amount,
      currency,
      effectiveEntryDate,
      status: 'Processing',
      returnCode: null,
      dtsReturned: null,
      dtsCreated: now,
      dtsUpdated: now,
      webhookUrl,
    };
    const event = (stored: AchPaymentDocument) =>
      recordEvent(
        this.db,
        'ach.debit',
        audienceOf(stored),
        { svcTransactionId, entryDate: stored.effectiveEntryDate, amount: fromMinor(stored.amount, stored.currency) },
        `${svcTransactionId}:debit`,
      );
    try {
      await this.payments.insertOne(payment);
    } catch (error) {
      if (error instanceof MongoServerError && error.code === 11000) {
        // The debit exists; make sure its event does too (a failure may have come between the two).
        const stored = await this.payments.findOne({ _id: svcTransactionId });
        if (stored) await event(stored);
        throw appError(ErrorCode.CONFLICT, `ACH payment ${svcTransactionId} exists.`, { field: 'svcTransactionId' });
      }
      throw error;
    }
    await event(payment);
    await this.notify(payment);
    return payment;
  }

  /** Records a return; only a debit not yet returned can be returned (a conditional update). */
  async recordReturn(input: { svcTransactionId?: unknown; returnCode?: unknown }) {
    const svcTransactionId = checkString(required(input.svcTransactionId, 'svcTransactionId'), 'svcTransactionId', ID_RULE)!;
    const returnCode = checkString(required(input.returnCode, 'returnCode'), 'returnCode', {
      pattern: RETURN_CODE_PATTERN,
      patternText: 'a Nacha return code such as R01',
    })!;
    const now = new Date();
    const returned = await this.payments.findOneAndUpdate(
      { _id: svcTransactionId, status: { $ne: 'Returned' } },
      { $set: { status: 'Returned', returnCode, dtsReturned: now, dtsUpdated: now } },
      { returnDocument: 'after' },
    );
    const event = (stored: AchPaymentDocument) =>
      recordEvent(
        this.db,
        'ach.return',
        audienceOf(stored),
        {
          svcTransactionId,
          entryDate: stored.effectiveEntryDate,
          amount: fromMinor(stored.amount, stored.currency),
          returnCode: stored.returnCode,
        },
        `${svcTransactionId}:return`,
      );
    if (!returned) {
      const exists = await this.payments.findOne({ _id: svcTransactionId });
      if (!exists) throw appError(ErrorCode.NOT_FOUND, `No ACH payment ${svcTransactionId}.`, { field: 'svcTransactionId' });
      // Returned already; make sure its event exists (a failure may have come between the two).
      await event(exists);
      throw appError(ErrorCode.CONFLICT, `ACH payment ${svcTransactionId} is already returned.`);
    }
    await event(returned);
    await this.notify(returned);
    return returned;
  }
}

/** What compliance counts of an ACH event: a debit entered, or a debit returned with a code. */
function activityOf(event: OutboxEvent<'ach.debit' | 'ach.return'>): AchActivity {
  const common = {
    eventId: event._id,
    svcAggregatorId: event.audience.svcAggregatorId!,
    svcTransactionId: event.payload.svcTransactionId,
    entryDate: event.payload.entryDate,
    amount: event.payload.amount,
  };
  return event.type === 'ach.debit'
    ? { ...common, kind: 'debit', returnCode: null }
    : { ...common, kind: 'return', returnCode: event.payload.returnCode };
}

/**
 * Forwards ACH debits and returns from the outbox to the compliance subgraph through the graph;
 * compliance counts each event once, by its id, so a batch carried twice changes nothing.
 */
export function achForwarder(graph: GraphClient): Dispatcher {
  return graphForwarder({
    name: 'ACH forwarding',
    types: ['ach.debit', 'ach.return'],
    batch: FORWARD_BATCH,
    graph,
    mutation: APPLY,
    variablesOf: (events) => ({ activities: events.map(activityOf) }),
  });
}
